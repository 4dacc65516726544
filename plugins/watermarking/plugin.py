"""Plugin ``watermarking.default``: Flink's watermark generators and StatusWatermarkValve."""

from kernel import hookimpl


@hookimpl
def create_watermark_generator(strategy, run):
    from plugins.watermarking.generators import create_generator

    return create_generator(strategy, run.clock.now_ms)


@hookimpl
def create_watermark_valve(num_channels):
    from plugins.watermarking.valve import StatusWatermarkValve

    return StatusWatermarkValve(num_channels)
