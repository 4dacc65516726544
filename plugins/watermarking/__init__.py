"""Watermarking plugins: watermark generators, the StatusWatermarkValve, source alignment."""
