"""WindowWordCount, built as seed 001 describes it.

A text source (parallelism 1) -> flat_map into (word, 1) (parallelism 4, slot sharing group
"flatMap_sg") -> key_by word -> 5 s tumbling event-time window summing the counts
(parallelism 3, "sum_sg") -> print (parallelism 3). Each line of the input starts with its
event time in milliseconds.

It compiles to three job vertices: the source, the flat map, and the window with the print
sink chained into it (``rill plan examples/window_wordcount.py``).
"""

import os

from kernel.common import Duration, Time, Types, WatermarkStrategy
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.file_system import FileSource, StreamFormat
from kernel.datastream.window import TumblingEventTimeWindows

INPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "lines.txt")


class LeadingTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return int(value.split(" ", 1)[0])


def split(line):
    for word in line.split()[1:]:
        yield word, 1


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    watermarks = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)).with_timestamp_assigner(
        LeadingTimestamp()
    )
    text = env.from_source(
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), INPUT).build(), watermarks, "Text File"
    ).set_parallelism(1)
    counts = (
        text.flat_map(split, output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .set_parallelism(4)
        .slot_sharing_group("flatMap_sg")
        .key_by(lambda pair: pair[0], key_type=Types.STRING())
        .window(TumblingEventTimeWindows.of(Time.seconds(5)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .set_parallelism(3)
        .slot_sharing_group("sum_sg")
    )
    counts.print().set_parallelism(3)
    env.execute("Window WordCount")


if __name__ == "__main__":
    main()
