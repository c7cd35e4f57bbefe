import Promise
import PromiseJSON
import PromiseModel

/// Carries the core's news of settlements and progress to the registry, on
/// the loop thread, in the order it came: made once per registry, and
/// captured by every promise's observers (captured in each observer's
/// closure instead, the registry's weak reference would be copied and
/// destroyed, and the existential executor copied, for every promise).
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
/// made, queued under a lock, an idle watcher started, then run and freed)
/// on every settlement (docs/PERFORMANCE.md).
///
/// Passing news on is bounded per loop turn (``TurnBudget``): a cancel or
/// a settlement that reaches 100,000 promises makes 100,000 pieces of news,
/// each telling waiters and subscribers. What is left once the turn's
/// budget is spent is passed on in later turns, through one executor item
/// at a time, and news heard meanwhile queues behind it, in order.
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
    /// Set while news held past a turn's budget waits for a later turn:
    /// all news queues in `held` behind it.
    @exclusivity(unchecked) private var isPassingOnLater = false
    /// Set while ``passOnLater()`` hands its work to the executor, and
    /// whether the executor ran it meanwhile.
    @exclusivity(unchecked) private var isHandingOver = false
    @exclusivity(unchecked) private var ranAtOnce = false
    /// How long news is passed on in one turn.
    var turnBudget = TurnBudget.standard

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
        passOnHeld(registry)
        answering -= 1
    }

    /// Passes on the news held, in order, until none is left or the turn's
    /// budget is spent; the rest waits for a later turn.
    private func passOnHeld(_ registry: Registry) {
        var budget = turnBudget
        budget.start()
        // Indexed, not taken out of `held`: a push below can make a connection
        // resume and answer a held-back line, whose end runs this loop too and
        // must carry on from the same place, not pass newer news first. It
        // may leave the rest for a later turn: this loop stops there too.
        while heldStart < held.count, !isPassingOnLater {
            let news = held[heldStart]
            heldStart += 1
            registry.receive(news)
            if heldStart < held.count && !isPassingOnLater && budget.isSpent {
                guard passOnLater() else { return }
                budget.start()
            }
        }
        guard heldStart > 0, heldStart == held.count else { return }
        // A burst's storage is let go; an answer's one or two items are not.
        if held.count > 64 { held = [] } else { held.removeAllKeepingStorage() }
        heldStart = 0
    }

    /// Passes on the rest of `held` in a later turn. Returns true when the
    /// executor ran that at once (unit tests' `.inline`): the caller then
    /// goes on itself, rather than one call deeper per turn's worth of news.
    private func passOnLater() -> Bool {
        isPassingOnLater = true
        inExecutor += 1
        isHandingOver = true
        executor.execute { [self] in
            inExecutor -= 1
            isPassingOnLater = false
            if isHandingOver {
                ranAtOnce = true
                return
            }
            guard let registry else { return }
            passOnHeld(registry)
        }
        isHandingOver = false
        defer { ranAtOnce = false }
        return ranAtOnce
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
        if (answering > 0 && inExecutor == 0) || isPassingOnLater {
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
