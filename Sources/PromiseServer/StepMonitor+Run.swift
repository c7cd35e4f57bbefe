internal import CLibUV
internal import CProcessSpawn
import Glibc
import PromiseRegistry
import Synchronization

/// How this executable becomes a step's monitor (``StepMonitor``): the
/// start of `main` hands over to it when the command line asks, and the
/// monitor then starts the command and waits for everything it started.
extension StepMonitor {
    /// Whether this executable can be a monitor (it called ``takeOverIfAsked(_:)``).
    private static let available = Atomic<Bool>(false)

    /// Whether commands run under a monitor: only in an executable that
    /// calls ``takeOverIfAsked(_:)``, on a kernel with pidfd_open.
    static var isAvailable: Bool { available.load(ordering: .relaxed) && PosixSpawnProcess.isAvailable }

    /// Becomes a step's monitor when `arguments` ask for it, and then never
    /// returns; else marks this executable as one that can be, and returns.
    /// Call it first thing in `main`, before any thread starts.
    public static func takeOverIfAsked(_ arguments: [String] = CommandLine.arguments) {
        guard arguments.count >= 2, arguments[1] == option else {
            available.store(true, ordering: .relaxed)
            return
        }
        guard let invocation = Invocation(arguments) else {
            fail("usage: promised \(option) GRACE_MS [--files PREFIX] [--limit BYTES] -- PROGRAM [ARG…]", status: 64)
        }
        run(invocation)
    }

    private static func run(_ invocation: Invocation) -> Never {
        let argv = invocation.argv
        let prepared = CProcessSpawn_monitor_prepare()
        if prepared != 0 {
            fail("cannot run \(argv[0]): \(UVError(code: -prepared, function: "prctl"))", status: 127)
        }
        // Never freed: the monitor ends in CProcessSpawn_monitor_wait.
        let prefix = invocation.files.flatMap { strdup($0) }
        var output = CProcessSpawn_monitor_output()
        let opened = CProcessSpawn_monitor_open_output(&output, prefix.map { UnsafePointer($0) }, Int64(invocation.limit))
        if opened != 0 {
            fail("cannot run \(argv[0]): \(UVError(code: -opened, function: "socketpair"))", status: 127)
        }
        let arguments = CStringArray(argv)
        var pid: Int32 = 0
        var error = CProcessSpawn_monitor_start(&pid, arguments.pointer, &output)
        for wait in retryMilliseconds where error == ETXTBSY || error == EMFILE || error == ENFILE {
            usleep(wait * 1_000)
            error = CProcessSpawn_monitor_start(&pid, arguments.pointer, &output)
        }
        arguments.free()
        if error != 0 {
            // As the daemon words a command that cannot start; no outcome is
            // written, and the daemon that started it reads this message.
            fail("cannot run \(argv[0]): \(UVError(code: -error, function: "uv_spawn"))", status: 127)
        }
        CProcessSpawn_monitor_wait(pid, invocation.graceMilliseconds, &output)
        fatalError("CProcessSpawn_monitor_wait returned")
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        let line = Array((message + "\n").utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(status)
    }
}
