"""The messaging layer across processes: length-prefixed frames over TCP (:mod:`.tcp`), the
transport carrying the components' messages between the processes of a run
(:mod:`.transport`) and the proof that a peer belongs to the run (:mod:`.security`)."""
