"""Plugin ``watermarking.default``: Flink's watermark generators and StatusWatermarkValve;
sources read unaligned."""

from kernel import hookimpl


@hookimpl
def create_watermark_generator(strategy, activity_clock):
    from plugins.watermarking.generators import create_generator

    return create_generator(strategy, activity_clock)


@hookimpl
def create_watermark_valve(num_channels):
    from plugins.watermarking.valve import StatusWatermarkValve

    return StatusWatermarkValve(num_channels)
