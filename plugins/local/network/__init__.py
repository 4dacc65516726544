"""The network between tasks, as Flink's: the producer side (:mod:`.partition`,
:mod:`.record_writer`), the consumer side (:mod:`.input_gate`, :mod:`.input_channel`) and the
:mod:`.shuffle` environment connecting them, with credit-based flow control."""
