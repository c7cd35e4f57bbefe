import Glibc
import PromiseJSON
import PromiseModel
import PromiseStore

/// One store, one daemon: an exclusive `flock` on `promised.lock` in the
/// store folder, held for as long as the store is open.
///
/// A second daemon on the same store would find the first one's running
/// steps, take them for leftovers of a crash and stop them; so it does not
/// start, and says which daemon holds the store: the holder writes its pid
/// and socket into the lock file as one JSON line (`{"pid":…,"socket":…}`).
/// The kernel drops the lock when the holder's descriptor closes, which it
/// does when the process dies, `kill -9` included; the descriptor is not
/// inherited by the commands the daemon starts (`O_CLOEXEC`).
final class StoreLock: Sendable {
    /// The lock file's name in the store folder.
    static let fileName = "promised.lock"

    /// The locked descriptor, closed (and the lock with it) in `deinit`.
    private let descriptor: Int32

    /// Takes the lock of the store in `directory` (which ``StoreFolder``
    /// has checked) and writes this process's pid and `socketPath` in it.
    ///
    /// - Throws: ``PromiseStoreError`` naming the daemon that holds it, or
    ///   why the lock file cannot be used.
    init(directory: String, socketPath: String?) throws(PromiseStoreError) {
        let path = directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName
        try StoreFolder.checkFile(path)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw PromiseStoreError("cannot open the store's lock file \(path): \(Self.errnoText())")
        }
        do throws(PromiseStoreError) {
            var status = stat()
            guard fstat(descriptor, &status) == 0 else {
                throw PromiseStoreError("cannot inspect the store's lock file \(path): \(Self.errnoText())")
            }
            // The file opened may not be the one checked before, had it just been replaced.
            try StoreFolder.checkFile(path, status)
            guard try Self.lock(descriptor, path: path) else {
                throw PromiseStoreError(
                    "the store \(directory) is in use by another daemon (\(Self.holder(descriptor))); "
                        + "one store serves one daemon: stop that one first, or give this one another --store")
            }
            try Self.write(holder: socketPath, to: descriptor, path: path)
        } catch {
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Takes the exclusive lock, waiting up to ``settleTime`` for a holder
    /// that only just let go: `false` if another daemon still holds it.
    ///
    /// A lock is held by an open file description, not by a descriptor, so
    /// closing the store does not free it at once while a child forked by
    /// this process (before its `exec` closes the `O_CLOEXEC` copy) shares
    /// it. Such a hold lasts microseconds; a daemon's lasts its lifetime.
    private static func lock(_ descriptor: Int32, path: String) throws(PromiseStoreError) -> Bool {
        let deadline = monotonicNanoseconds() + settleTime
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw PromiseStoreError("cannot lock the store's lock file \(path): \(errnoText())")
            }
            guard monotonicNanoseconds() < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    /// How long a lock held by someone else may take to be let go (ns).
    static let settleTime: UInt64 = 500_000_000

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Replaces the lock file's content with this process's pid and socket.
    private static func write(holder socketPath: String?, to descriptor: Int32, path: String) throws(PromiseStoreError) {
        var holder: [String: JSONValue] = ["pid": .int(Int(getpid()))]
        if let socketPath { holder["socket"] = .string(socketPath) }
        let line = JSONValue.object(holder).serialized() + [UInt8(ascii: "\n")]
        guard fchmod(descriptor, 0o600) == 0, ftruncate(descriptor, 0) == 0 else {
            throw PromiseStoreError("cannot write the store's lock file \(path): \(errnoText())")
        }
        let written = line.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        guard written == line.count else {
            throw PromiseStoreError("cannot write the store's lock file \(path): \(errnoText())")
        }
    }

    /// "pid 1234, socket /run/user/1000/promised.sock" from the holder's lock
    /// file, or what can be said when it has not written it yet.
    private static func holder(_ descriptor: Int32) -> String {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0, let holder = try? JSONValue(parsing: bytes[..<count]),
              let pid = holder["pid"]?.intValue else {
            return "it has not written its pid yet"
        }
        guard let socket = holder["socket"]?.stringValue else { return "pid \(pid)" }
        return "pid \(pid), socket \(socket)"
    }

    private static func errnoText() -> String {
        String(cString: strerror(errno))
    }
}
