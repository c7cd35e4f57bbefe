import Glibc

/// Readiness for a `Type=notify` systemd unit: sd_notify(3)'s protocol,
/// written by hand rather than linking libsystemd. The service manager puts
/// a Unix datagram socket in `$NOTIFY_SOCKET` (a path, or an abstract name
/// written with a leading `@`); the daemon sends it `READY=1` once clients
/// are served, so that `systemctl start promised` returns only then and units
/// ordered after it find the socket answering.
///
/// The variable is read and removed from the environment at start, before
/// any thread runs (`unsetenv` is not thread-safe), so that the commands the
/// daemon starts do not inherit it. Without it, nothing is sent.
struct ServiceNotification: Sendable {
    /// Where to send, as `$NOTIFY_SOCKET` gave it; nil when not run by a service manager.
    let socket: String?

    /// Takes `$NOTIFY_SOCKET` out of the environment. Call once, before any thread starts.
    static func takeFromEnvironment() -> ServiceNotification {
        let socket = getenv("NOTIFY_SOCKET").map { String(cString: $0) }
        unsetenv("NOTIFY_SOCKET")
        return ServiceNotification(socket: socket.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// `READY=1` with this process's pid.
    func ready() -> String? {
        send("READY=1\nMAINPID=\(getpid())")
    }

    /// Sends `state` as one datagram. Returns why it could not, or nil when
    /// it was sent (or there is no socket to send to).
    func send(_ state: String) -> String? {
        guard let socket else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(socket.utf8)
        let abstract = name.first == UInt8(ascii: "@")
        if abstract { name[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A path needs room for its NUL; an abstract name is counted by the length alone.
        guard name.count + (abstract ? 0 : 1) <= capacity, name.count > 0 else {
            return "NOTIFY_SOCKET is too long for a Unix socket address: \(socket)"
        }
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path.copyBytes(from: name)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + name.count + (abstract ? 0 : 1))
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return "cannot make a socket for NOTIFY_SOCKET: \(String(cString: strerror(errno)))" }
        defer { close(descriptor) }
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, length) }
            }
        }
        guard sent == message.count else {
            return "cannot notify the service manager at \(socket): \(String(cString: strerror(errno)))"
        }
        return nil
    }
}
