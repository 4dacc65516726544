"""WordCount, seed 001's job without the window: a running count per word.

A text source (parallelism 1) -> flat_map into (word, 1) (parallelism 4, slot sharing group
"flatMap_sg") -> key_by word -> sum of the counts (parallelism 3, "sum_sg") -> print
(parallelism 3). Every line printed is a word's count so far, prefixed with the subtask of
the printing sink (``2> (be,2)``).

    rill run examples/wordcount.py
"""

import os

from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.file_system import FileSource, StreamFormat

INPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "hamlet.txt")


def split(line):
    for word in line.lower().split():
        yield word.strip(".,;:!?'\""), 1


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    text = env.from_source(
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), INPUT).build(),
        WatermarkStrategy.no_watermarks(), "Text File",
    ).set_parallelism(1)
    counts = (
        text.flat_map(split, output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .set_parallelism(4)
        .slot_sharing_group("flatMap_sg")
        .key_by(lambda pair: pair[0], key_type=Types.STRING())
        .sum(1)
        .set_parallelism(3)
        .slot_sharing_group("sum_sg")
    )
    counts.print().set_parallelism(3)
    env.execute("WordCount")


if __name__ == "__main__":
    main()
