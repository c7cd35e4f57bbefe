@testable import PromiseModel
@testable import PromiseRegistry
import Testing

@Suite("StepLife: a step's command from its turn to its exit, and at restart")
struct StepLifeTests {
    let monitor = LeftoverProcessGroup(pid: 4242, startTime: 777)

    @Test("with a free slot a step is written ahead, launched, recorded, then settled from its exit")
    func freeSlotRunsToExit() {
        var life = StepLife()
        #expect(!life.hasStarted)
        #expect(life.asked(slotFree: true) == .writeAhead)
        #expect(life.hasStarted)
        #expect(life.committed(failure: nil) == .launch)
        #expect(life.started(monitor) == .record(monitor))
        #expect(life.state == .running(monitor))
        let outcome = ProcessOutcome(exitStatus: 0, stdout: Array("done\n".utf8))
        #expect(life.exited(outcome) == .settle(outcome))
        #expect(life.state == .exited(outcome))
        #expect(life.exited(outcome) == .none, "an exit is settled once")
    }

    @Test("without a slot a step queues, and is written ahead when its turn comes")
    func queuedThenGranted() {
        var life = StepLife()
        #expect(life.asked(slotFree: false) == .queue)
        #expect(!life.hasStarted)
        #expect(life.slotGranted() == .writeAhead)
        #expect(life.state == .writtenAhead)
    }

    @Test("a failed write-ahead rejects the step without starting it")
    func failedWriteAheadRejects() {
        var life = StepLife(state: .writtenAhead)
        #expect(life.committed(failure: "disk full") == .reject("not run: the store cannot write (disk full)"))
        #expect(life.state == .cancelled)
    }

    @Test("cancel before the start never runs it; a slot granted afterwards is given back")
    func cancelBeforeStart() {
        var queued = StepLife(state: .queued)
        #expect(queued.cancelled() == .none)
        #expect(queued.slotGranted() == .releaseSlot)
        var writing = StepLife(state: .writtenAhead)
        #expect(writing.cancelled() == .releaseSlot)
        #expect(writing.committed(failure: nil) == .none, "a cancelled step does not launch")
    }

    @Test("cancel of a running step terminates it and waits for its exit to settle")
    func cancelWhileRunning() {
        var life = StepLife(state: .running(monitor))
        #expect(life.cancelled() == .terminate)
        let killed = ProcessOutcome(exitStatus: 143, signal: 15)
        #expect(life.exited(killed) == .settle(killed))
    }

    @Test("a clean stop leaves a running step running unless told to stop steps")
    func cleanStop() {
        var life = StepLife(state: .running(monitor))
        #expect(life.daemonStopping(stopSteps: false) == .none)
        #expect(life.daemonStopping(stopSteps: true) == .terminate)
        var idle = StepLife()
        #expect(idle.daemonStopping(stopSteps: true) == .none)
    }

    @Test("at restart: a live monitor is re-attached, a written outcome settles, a lost one rejects")
    func restartDecisions() {
        let written = ProcessOutcome(exitStatus: 0, stdout: Array("done\n".utf8))
        #expect(StepLife.atRestart(monitor: monitor, isAlive: true, canReattach: true, written: nil)
            == (StepLife(state: .running(monitor)), .reattach(monitor)))
        #expect(StepLife.atRestart(monitor: monitor, isAlive: true, canReattach: false, written: nil).1
            == .stopAndReject(monitor))
        #expect(StepLife.atRestart(monitor: monitor, isAlive: false, canReattach: true, written: written)
            == (StepLife(state: .exited(written)), .settle(written)))
        #expect(StepLife.atRestart(monitor: monitor, isAlive: false, canReattach: true, written: nil).1 == .reject)
        #expect(StepLife.atRestart(monitor: nil, isAlive: false, canReattach: true, written: nil).1 == .reject)
    }
}
