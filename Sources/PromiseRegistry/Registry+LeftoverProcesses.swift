import Logging
import PromiseJSON
import PromiseModel
import PromiseStore
#if canImport(Glibc)
import Glibc
#endif

/// Commands that a crashed daemon left running (docs/DURABILITY.md,
/// "Commands left running by a crash"): each started command's process group
/// and start time are stored with its child, and the next start stops that
/// group if it is still the same process, before rejecting the child.
extension Registry {
    /// Stores the pid and start time of `job`'s command just started, in a
    /// commit after the one that marked it started (write-ahead): a crash
    /// between the two leaves a command that a restart cannot stop.
    func recordProcess(_ process: any RunningProcess, of job: ExecJob, childID: String) {
        guard journal != nil, let pid = process.processID, let startTime = leftoverProcesses.startTime(pid) else { return }
        job.recordedProcess = LeftoverProcessGroup(pid: pid, startTime: startTime)
        journal?.touch(childID)
    }

    /// At start-up, for a pending child whose command was running when the
    /// daemon died: stops its process group (TERM and CONT now, KILL after
    /// `killGraceMilliseconds` and ``StepMonitor/backstopMilliseconds``) if
    /// its leader is still the process recorded, and returns the child's
    /// rejection. The leader is the command's monitor (StepMonitor.swift),
    /// which passes the TERM on to all the command started and kills them
    /// after its grace. A process that has ended or a pid now used by
    /// another process is not signalled.
    func stopLeftoverCommand(of stored: StoredPromise) -> RemoteRejection {
        let argv = JSONValue.array((stored.exec ?? []).map(JSONValue.string))
        guard let pid = stored.execPid, let startTime = stored.execStartTime else {
            return Self.interruptedCommand(stored.exec ?? [])
        }
        let group = LeftoverProcessGroup(pid: pid, startTime: startTime)
        let system = leftoverProcesses
        guard group.signalIfSame(SIGTERM, in: system) else {
            return Self.interruptedCommand(stored.exec ?? [])
        }
        group.signalIfSame(SIGCONT, in: system)
        // Checked again before KILL: the group may have ended and its number been given again.
        _ = services.schedule(afterMilliseconds: limits.killGraceMilliseconds + StepMonitor.backstopMilliseconds) {
            group.signalIfSame(SIGKILL, in: system)
        }
        logger.info("Stopped a command left running by the previous daemon", metadata: [
            "promise.id": "\(stored.id)", "process.pid": "\(pid)", "process.argv": "\(stored.exec ?? [])",
        ])
        return RemoteRejection(
            message: "stopped at restart: its command was still running when the daemon stopped, and is not run again",
            data: ["exec": argv, "pid": .int(Int(pid))])
    }
}
