import Foundation
import PromiseClient
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Who is on the other end of the socket, and what the daemon does with the
/// file system around it (issue 22, item 9): the client refuses a socket
/// served by another uid before sending anything, and the daemon neither
/// follows a symlinked folder, nor uses a folder others can write to, nor
/// removes a socket it could not try.
@Suite("socket ownership and the socket's folder")
struct SocketSecurityTests {
    static let nobody = "65534"

    /// Runs `arguments` as uid and gid 65534 (`setpriv`).
    private func asNobody(_ arguments: [String]) -> (String, [String]) {
        ("/usr/bin/setpriv", ["--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups"] + arguments)
    }

    @Test("promisectl refuses a socket served by another uid, sends it nothing, and exits 69",
          .enabled(if: getuid() == 0, "needs root to act as another uid"))
    func clientRefusesForeignDaemon() throws {
        let folder = try E2ETemporaryFolder()
        chmod(folder.path, 0o777)
        let socket = folder.path + "/planted.sock"
        let received = folder.path + "/received"
        // Another user's listener that keeps whatever it is sent.
        let (program, arguments) = asNobody([
            "/usr/bin/socat", "-u", "UNIX-LISTEN:\(socket),mode=666,fork", "OPEN:\(received),creat,append",
        ])
        let planted = try E2ECommand.start(program, arguments)
        defer {
            kill(planted.pid, SIGKILL)
            _ = try? planted.finish(timeout: .seconds(5))
        }
        #expect(E2E.eventually { FileManager.default.fileExists(atPath: socket) })

        let result = try E2ECommand.run(E2EBinaries.promisectl, ["resolve", "secret", #""the value""#, "--socket", socket])
        #expect(result.status == 69, "\(result)")
        #expect(result.stderr == "promisectl: refusing the daemon at \(socket): it runs as uid 65534, not as this user "
                    + "(uid 0); anyone could have put that socket there\n", "\(result)")
        let error = #expect(throws: PromiseClientError.self) { try BlockingPromiseClient(socketPath: socket) }
        #expect(error?.code == .foreignDaemon)
        // The listener saw the connections end with nothing sent.
        #expect(E2E.eventually { FileManager.default.fileExists(atPath: received) })
        let bytes = try? Data(contentsOf: URL(fileURLWithPath: received))
        #expect(bytes?.isEmpty == true, "the planted socket got \(String(describing: bytes))")
    }

    @Test("the daemon refuses a socket folder that is a symbolic link, and leaves it alone")
    func daemonRefusesSymlinkedFolder() throws {
        let folder = try E2ETemporaryFolder()
        mkdir(folder.path + "/real", 0o700)
        symlink(folder.path + "/real", folder.path + "/link")
        let result = try E2ECommand.run(
            E2EBinaries.promised, ["--in-memory", "--socket", folder.path + "/link/s.sock"], timeout: .seconds(10))
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains("\(folder.path)/link is a symbolic link"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/real/s.sock"))
    }

    @Test("the daemon refuses a socket folder writable by others and not sticky")
    func daemonRefusesWorldWritableFolder() throws {
        let folder = try E2ETemporaryFolder()
        chmod(folder.path, 0o777)
        let result = try E2ECommand.run(
            E2EBinaries.promised, ["--in-memory", "--socket", folder.path + "/s.sock"], timeout: .seconds(10))
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains("\(folder.path) is writable by other users and not sticky"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/s.sock"))
    }

    @Test("a live socket the daemon cannot connect to (EACCES) is not removed as stale",
          .enabled(if: getuid() == 0, "needs root to act as another uid"))
    func socketNotRemovedOnAccessDenied() throws {
        let folder = try E2ETemporaryFolder()
        let socket = folder.path + "/s.sock"
        // Root listens on a 0600 socket in a folder that uid 65534 owns (so it could remove it).
        let listener = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(listener) }
        #expect(UnixSocketAddress(path: socket)?.bind(listener) == 0)
        #expect(listen(listener, 8) == 0)
        chmod(socket, 0o600)
        chown(folder.path, 65534, 65534)
        chmod(folder.path, 0o700)

        let (program, arguments) = asNobody([E2EBinaries.promised, "--in-memory", "--socket", socket])
        let result = try E2ECommand.run(program, arguments, timeout: .seconds(10))
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains("cannot tell whether a daemon listens on \(socket)"), "\(result)")
        // Still root's socket, still accepting.
        let probe = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(probe) }
        #expect(UnixSocketAddress(path: socket)?.connect(probe) == 0, "errno \(errno)")
    }
}
