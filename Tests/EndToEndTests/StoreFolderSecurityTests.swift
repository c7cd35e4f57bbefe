import Foundation
import PromiseClient
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Whoever can write the store can make the daemon run commands as its user
/// (a queued `then … exec` step starts when the daemon does): `promised`
/// refuses a store folder or file of another user, one others can write to,
/// and one reached through a symbolic link, saying why and how to fix it,
/// before it reads or creates anything there.
@Suite("the store folder: whose it is and who can write to it")
struct StoreFolderSecurityTests {
    static let nobody: uid_t = 65534

    /// `promised --socket F/s.sock --store STORE` run to its end (it is expected not to start).
    private func refusedStart(_ folder: E2ETemporaryFolder, store: String) throws -> E2ECommandResult {
        try E2ECommand.run(
            E2EBinaries.promised, ["--socket", folder.path + "/s.sock", "--store", store], timeout: .seconds(10))
    }

    private func mode(_ path: String) -> mode_t? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return status.st_mode & 0o7777
    }

    private func entries(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    @Test("a store folder that belongs to another user is refused, exit 1, naming the owner and the chown that fixes it",
          .enabled(if: getuid() == 0, "needs root to give a folder to another uid"))
    func refusesForeignFolder() throws {
        let folder = try E2ETemporaryFolder()
        let store = folder.path + "/store"
        #expect(mkdir(store, 0o700) == 0)
        #expect(chown(store, Self.nobody, Self.nobody) == 0)

        let result = try refusedStart(folder, store: store)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains(
            "the store folder \(store) belongs to uid 65534 (nobody), not to uid 0 (root) that this daemon runs as; "
                + "whoever owns it can put commands in it that the daemon runs: `chown -R 0 \(store)` if its content "
                + "is yours, or choose another --store"), "\(result)")
        #expect(entries(store).isEmpty, "the daemon wrote into the refused folder: \(entries(store))")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/s.sock"))
    }

    @Test("a store file that belongs to another user is refused, naming the file",
          .enabled(if: getuid() == 0, "needs root to give a file to another uid"))
    func refusesForeignFile() throws {
        let folder = try E2ETemporaryFolder()
        let store = folder.path + "/store"
        #expect(mkdir(store, 0o700) == 0)
        let database = store + "/promises.sqlite3"
        #expect(FileManager.default.createFile(atPath: database, contents: nil))
        #expect(chown(database, Self.nobody, Self.nobody) == 0)
        chmod(database, 0o600)

        let result = try refusedStart(folder, store: store)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("the store file \(database) belongs to uid 65534 (nobody), not to uid 0 (root)"),
                "\(result)")
    }

    @Test("a store folder inside a folder of another user is refused: that user could swap it",
          .enabled(if: getuid() == 0, "needs root to give a folder to another uid"))
    func refusesFolderUnderForeignParent() throws {
        let folder = try E2ETemporaryFolder()
        let parent = folder.path + "/theirs"
        #expect(mkdir(parent, 0o755) == 0)
        #expect(mkdir(parent + "/store", 0o700) == 0)
        #expect(chown(parent, Self.nobody, Self.nobody) == 0)

        let result = try refusedStart(folder, store: parent + "/store")
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains(
            "the store folder \(parent)/store is inside \(parent), which belongs to uid 65534 (nobody)"), "\(result)")
    }

    @Test("a store folder that is a symbolic link is refused, and nothing is written where it points")
    func refusesSymlinkedFolder() throws {
        let folder = try E2ETemporaryFolder()
        #expect(mkdir(folder.path + "/real", 0o700) == 0)
        #expect(symlink(folder.path + "/real", folder.path + "/link") == 0)

        let result = try refusedStart(folder, store: folder.path + "/link")
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains(
            "the store folder \(folder.path)/link is a symbolic link; whoever owns the link can point it at another "
                + "store: give the real folder in --store"), "\(result)")
        #expect(entries(folder.path + "/real").isEmpty, "\(entries(folder.path + "/real"))")
    }

    @Test("a store file that is a symbolic link is refused")
    func refusesSymlinkedFile() throws {
        let folder = try E2ETemporaryFolder()
        let store = folder.path + "/store"
        #expect(mkdir(store, 0o700) == 0)
        #expect(FileManager.default.createFile(atPath: folder.path + "/elsewhere", contents: nil))
        #expect(symlink(folder.path + "/elsewhere", store + "/promised.lock") == 0)

        let result = try refusedStart(folder, store: store)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains(
            "the store file \(store)/promised.lock is a symbolic link; a store's files must be plain files: remove the link"),
                "\(result)")
        #expect(try String(contentsOfFile: folder.path + "/elsewhere", encoding: .utf8).isEmpty)
    }

    @Test("a store folder others can write to (0777) is refused, with the chmod that fixes it")
    func refusesWorldWritableFolder() throws {
        let folder = try E2ETemporaryFolder()
        let store = folder.path + "/store"
        #expect(mkdir(store, 0o700) == 0)
        #expect(chmod(store, 0o777) == 0)

        let result = try refusedStart(folder, store: store)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains(
            "the store folder \(store) is writable by other users (mode 0777); they could put commands in it that "
                + "the daemon runs: `chmod 700 \(store)`"), "\(result)")
        #expect(entries(store).isEmpty, "\(entries(store))")
    }

    @Test("a store folder its group can write to (0770) is refused too")
    func refusesGroupWritableFolder() throws {
        let folder = try E2ETemporaryFolder()
        let store = folder.path + "/store"
        #expect(mkdir(store, 0o700) == 0)
        #expect(chmod(store, 0o770) == 0)

        let result = try refusedStart(folder, store: store)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("the store folder \(store) is writable by other users (mode 0770)"), "\(result)")
    }

    @Test("the default store folder, and each missing folder above it, is created 0700 whatever the umask")
    func defaultFolderIsPrivate() throws {
        let folder = try E2ETemporaryFolder()
        let state = folder.path + "/state"
        let socket = folder.path + "/s.sock"
        // umask 0 would make mkdir's 0700 the mode as is; 0 is what shows a chmod is not skipped.
        let daemon = try E2ECommand.start(
            "/bin/sh", ["-c", "umask 000 && exec \"$0\" \"$@\"", E2EBinaries.promised, "--socket", socket],
            environment: ["XDG_STATE_HOME": state])
        defer {
            kill(daemon.pid, SIGTERM)
            _ = try? daemon.finish(timeout: .seconds(10))
        }
        #expect(E2E.eventually {
            guard let client = try? BlockingPromiseClient(socketPath: socket, timeout: .seconds(2)) else { return false }
            client.close()
            return true
        }, "\(daemon.stderrSoFar)")
        #expect(mode(state) == 0o700)
        #expect(mode(state + "/promised") == 0o700)
        #expect(mode(state + "/promised/promises.sqlite3") == 0o600)
        #expect(mode(state + "/promised/promised.lock") == 0o600)
    }
}
