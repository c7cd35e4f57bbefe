import Promise

/// Carries the core's news of settlements and progress to the registry, on
/// the loop thread, in the order it came: made once per registry, and
/// captured by every promise's observers (captured in each observer's
/// closure instead, the registry's weak reference was copied and destroyed,
/// and the existential executor copied, for every promise).
///
/// The observers run inline, as the core settles or moves a promise, which
/// may be in the middle of a registry method; the registry's own work (it
/// answers waiters, tells subscribers, ends leases) must not run there. So:
/// - news heard while the dispatcher answers a line waits until the answer
///   is out (``Registry/endAnswer()``), as the pushes of that answer do;
/// - news heard anywhere else (a timer, a process exit, a closed
///   connection), or while earlier news still waits in the executor, goes
///   through the executor: later news never overtakes earlier news, so a
///   subscriber still hears the last `progress` before `settled`.
///
/// Holding it to the end of the answer spares the executor's hop (a closure
/// made, queued under a lock, an idle watcher started, then run and freed):
/// about 1,000 instructions per settlement, one per create+resolve pair.
final class SettlementRelay: @unchecked Sendable {  // loop-thread confined, as LoopBound: used only by observers that run on the loop thread and by the registry
    /// What an observer heard.
    enum News {
        case settled(RemotePromise)
        case progressed(RemotePromise, Double)
    }

    /// Weak, so that observers left on long-lived promises do not keep the registry alive.
    weak var registry: Registry?
    let executor: any Executor
    let journal: GroupCommit?
    // `@exclusivity(unchecked)` for the reason given in `Registry`: loop
    // thread only, no access spans a call that could reach it again.
    /// Lines being answered: more than one when a connection, resuming
    /// inside an answer, answers the lines it held back.
    @exclusivity(unchecked) private var answering = 0
    /// News handed to the executor and not yet passed on.
    @exclusivity(unchecked) private var inExecutor = 0
    /// News heard while answering, passed on from `heldStart` when the answer is out.
    @exclusivity(unchecked) private var held: [News] = []
    @exclusivity(unchecked) private var heldStart = 0

    init(executor: any Executor, journal: GroupCommit?) {
        self.executor = executor
        self.journal = journal
    }

    /// A line is being answered: news waits for ``endAnswer()``.
    func beginAnswer() {
        answering += 1
    }

    /// Passes on the news held while answering (and what that causes), in
    /// order, then ends the answer begun by the matching ``beginAnswer()``.
    func endAnswer(_ registry: Registry) {
        assert(answering > 0, "an answer ended that never began")
        // Indexed, not taken out of `held`: a push below can make a connection
        // resume and answer a held-back line, whose end runs this loop too and
        // must carry on from the same place, not pass newer news first.
        while heldStart < held.count {
            let news = held[heldStart]
            heldStart += 1
            registry.receive(news)
        }
        if heldStart > 0 {
            // A burst's storage is let go; an answer's one or two items are not.
            if held.count > 64 { held = [] } else { held.removeAllKeepingStorage() }
            heldStart = 0
        }
        answering -= 1
    }

    /// `entry` settled with `result`, as its core promise's observer, or
    /// the registry settling a promise without one, hears it: the outcome
    /// is kept, marked for the store, and relayed.
    func settled(_ entry: RemotePromise, _ result: Result<JSONValue, any Error>) {
        entry.settledWith(result)
        journal?.touch(entry.id)
        relay(.settled(entry))
    }

    /// Passes `news` on to the registry: after the answer, or through the executor.
    func relay(_ news: News) {
        if answering > 0 && inExecutor == 0 {
            held.append(news)
            return
        }
        inExecutor += 1
        let boxed = LoopBound(news)
        executor.execute { [self] in
            inExecutor -= 1
            registry?.receive(boxed.value)
        }
    }
}
