"""The JobMaster and what works beside it, as Flink's: the RPC endpoint (:mod:`.jobmaster`),
the DefaultScheduler with its failure handling (:mod:`.scheduler`), the SlotPool
(:mod:`.slotpool`), the ExecutionDeployer (:mod:`.deployer`) and the slot sharing of
execution vertices (:mod:`.slotsharing`)."""
