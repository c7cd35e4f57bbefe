@testable import PromiseRegistry
import PromiseStore
import Testing

/// The group commit's bookkeeping alone: no store, no writer, no loop.
@Suite("GroupCommitState")
struct GroupCommitStateTests {
    typealias State = GroupCommitState<String>

    /// The messages released by the last commit, with their failures' messages.
    static func released(_ state: inout State) -> [String] {
        var messages: [String] = []
        while let (message, failure) = state.nextReleased() {
            messages.append(failure.map { "\(message): \($0.message)" } ?? message)
        }
        return messages
    }

    /// The next cut, which the test expects there to be.
    static func cut(_ state: inout State) throws -> State.Cut {
        let cut = state.cut()
        return try #require(cut)
    }

    static func next(_ state: inout State) throws -> (String, PromiseStoreError?) {
        let next = state.nextReleased()
        return try #require(next)
    }

    static func isHeld(_ action: State.DeliverAction) -> Bool {
        if case .hold = action { return true }
        return false
    }

    static func ranNow(_ action: State.DeliverAction) -> (String, PromiseStoreError?)? {
        if case .run(let message, let failure) = action { return (message, failure) }
        return nil
    }

    @Test("the first change of a turn schedules one cut; the cut holds each id once, in the order first touched")
    func oneCutPerTurn() throws {
        var state = State()
        #expect(state.touched("b") == .scheduleCut)
        #expect(state.touched("a") == .none)
        #expect(state.touched("b") == .none)
        #expect(state.removed(StoreDeletion(id: "gone", sequence: 4)) == .none)
        let cut = try Self.cut(&state)
        #expect(cut.ids == ["b", "a"])
        #expect(cut.removals == [StoreDeletion(id: "gone", sequence: 4)])
        #expect(cut.mark.number == 1 && cut.mark.touches == 4)
        #expect(state.cut() == nil)
        #expect(state.touched("a") == .scheduleCut)
        #expect(try Self.cut(&state).mark.number == 2)
    }

    @Test("a message with nothing outstanding runs at once; one after a change waits for its cut's commit")
    func messagesWaitForTheirCut() throws {
        var state = State()
        #expect(Self.ranNow(state.deliver("read"))?.0 == "read")
        _ = state.touched("a")
        #expect(Self.isHeld(state.deliver("answer a")))
        let first = try Self.cut(&state)
        _ = state.touched("b")
        #expect(Self.isHeld(state.deliver("answer b")))
        let second = try Self.cut(&state)
        #expect(state.committed(first.mark, .success([])) == .committed(recovered: nil))
        #expect(Self.released(&state) == ["answer a"])
        #expect(state.committed(second.mark, .success([])) == .committed(recovered: nil))
        #expect(Self.released(&state) == ["answer b"])
        #expect(Self.ranNow(state.deliver("later"))?.0 == "later")
    }

    @Test("a change the store refuses fails only the messages that depend on it")
    func refusalReachesItsMessageOnly() throws {
        var state = State()
        _ = state.touched("big")
        _ = state.deliver("answer big")
        _ = state.touched("small")
        _ = state.deliver("answer small")
        let cut = try Self.cut(&state)
        _ = state.committed(cut.mark, .success([UnstorableChange(id: "big", sequence: 1, reason: "too big")]))
        #expect(Self.released(&state) == ["answer big: promise \"big\" cannot be stored: too big", "answer small"])
    }

    @Test("a failed commit releases every held message with the failure, runs new ones at once, and arms one retry")
    func failureReleasesEverything() throws {
        var state = State()
        _ = state.touched("a")
        _ = state.deliver("answer a")
        let first = try Self.cut(&state)
        _ = state.touched("b")
        _ = state.deliver("answer b")
        let second = try Self.cut(&state)
        let disk = PromiseStoreError("disk full")
        #expect(state.committed(first.mark, .failure(disk)) == .failing(disk, isNew: true, armRetry: true))
        #expect(Self.released(&state) == ["answer a: disk full", "answer b: disk full"])
        #expect(state.failure == disk)
        _ = state.touched("c")
        #expect(Self.ranNow(state.deliver("answer c")).map { $0.1 == nil } == true)
        #expect(Self.ranNow(state.deliverAfterCommit("exec c"))?.1 == disk)
        // The retry fails again: no second timer, and not logged as new.
        state.retryFired(resumed: true)
        #expect(state.committed(first.mark, .failure(disk)) == .failing(disk, isNew: false, armRetry: true))
        state.retryFired(resumed: true)
        #expect(state.committed(second.mark, .success([])) == .committed(recovered: disk))
        #expect(state.failure == nil)
    }

    @Test("a retry that finds nothing to write ends the failure")
    func emptyRetryEndsFailure() throws {
        var state = State()
        _ = state.touched("a")
        let cut = try Self.cut(&state)
        _ = state.committed(cut.mark, .failure(PromiseStoreError("io")))
        state.retryFired(resumed: false)
        #expect(state.failure == nil)
        #expect(!state.retryArmed)
    }

    @Test("a flush waits for what was touched before it but depends on no change")
    func flushWaits() throws {
        var state = State()
        #expect(Self.ranNow(state.flush("idle flush")) != nil)
        _ = state.touched("a")
        #expect(Self.isHeld(state.flush("flush")))
        let cut = try Self.cut(&state)
        _ = state.committed(cut.mark, .success([UnstorableChange(id: "a", sequence: 1, reason: "no")]))
        #expect(Self.released(&state) == ["flush"])
    }

    @Test("a message delivered while others are released is held for its own cut, not released with them")
    func deliveredDuringRelease() throws {
        var state = State()
        _ = state.touched("a")
        _ = state.deliver("answer a")
        let cut = try Self.cut(&state)
        _ = state.committed(cut.mark, .success([]))
        let first = try Self.next(&state)
        #expect(first.0 == "answer a")
        _ = state.touched("b")
        #expect(Self.isHeld(state.deliver("answer b")))
        #expect(state.nextReleased() == nil)
        let next = try Self.cut(&state)
        _ = state.committed(next.mark, .success([]))
        #expect(Self.released(&state) == ["answer b"])
    }

    @Test("step logs and pool limits alone make a cut; an empty log list does not")
    func logsAndLimitsCut() throws {
        var state = State()
        #expect(state.wrote(logs: []) == .none)
        #expect(state.cut() == nil)
        #expect(state.wrote(poolLimit: StoredPoolLimit(pool: "cc", limit: 2, startLimit: nil)) == .scheduleCut)
        let cut = try Self.cut(&state)
        #expect(cut.ids.isEmpty && cut.poolLimits == [StoredPoolLimit(pool: "cc", limit: 2, startLimit: nil)])
    }
}
