import Foundation
import Promise
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Synchronization
import Testing

private struct Build: Codable, Sendable, Hashable {
    var target: String
    var warnings: Int
}

/// Remote promises as core promises: `promise(_:as:)` mirrors, `watch`
/// streams, progress and cancellation across the process boundary.
@Suite("PromiseConnection: mirrors and watches")
struct PromiseConnectionMirrorTests {
    @Test("a mirror made before the id exists settles, typed, when another process creates and resolves it")
    func waitBeforeCreate() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        let mirror = remote.promise("build/lib", as: Build.self)
        let doubled = mirror.then { build in build.warnings * 2 }
        // The subscription is in place once a later request on the connection is answered.
        _ = try await remote.call("info")
        #expect(mirror.isPending)

        #expect(try daemon.ctl("create", "build/lib").status == 0)
        #expect(try daemon.ctl("resolve", "build/lib", #"{"target":"lib","warnings":3}"#).status == 0)
        #expect(try await mirror.value == Build(target: "lib", warnings: 3))
        #expect(try await doubled.value == 6)
    }

    @Test("a mirror of a promise settled already settles at once; rejected, it carries the reason and origin")
    func mirrorOfSettled() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("ok")
        try await remote.resolve("ok", with: "done")
        try await remote.create("bad")
        try await remote.reject("bad", reason: RemoteRejection(code: 7, message: "boom"))

        #expect(try await remote.promise("ok", as: String.self).value == "done")
        let error = await #expect(throws: RemoteRejection.self) { try await remote.promise("bad", as: String.self).value }
        #expect(error == RemoteRejection(code: 7, message: "boom", origin: "bad"))
    }

    @Test("a value that does not decode rejects the mirror with a decoding error naming the id and the field")
    func valueThatDoesNotDecode() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("build/lib")
        let mirror = remote.promise("build/lib", as: Build.self)
        try await remote.resolve("build/lib", with: ["target": "lib", "warnings": "many"] as JSONValue)
        let error = await #expect(throws: PromiseConnectionError.self) { try await mirror.value }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("\"build/lib\"") == true)
        #expect(error?.message.contains("warnings") == true)
        #expect(error?.data == ["target": "lib", "warnings": "many"])
        // The daemon's promise is what it was: fulfilled.
        #expect(try await remote.get("build/lib").state == .fulfilled)
    }

    @Test("10,000 mirrors on one connection, settled from another connection, each settle once with its own value")
    func tenThousandMirrors() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        let count = 10_000
        let settlements = Atomic<Int>(0)
        let mirrors = (0..<count).map { index in
            let mirror = remote.promise("m/\(index)", as: Int.self)
            mirror.onSettled(on: .inline) { _ in settlements.add(1, ordering: .relaxed) }
            return mirror
        }
        _ = try await remote.call("info")

        let settler = try daemon.client(timeout: .seconds(30))
        defer { settler.close() }
        for start in stride(from: 0, to: count, by: 500) {
            let entries = (start..<start + 500).flatMap { index in
                [BlockingPromiseClient.BatchEntry("create", ["id": .string("m/\(index)")]),
                 BlockingPromiseClient.BatchEntry("resolve", ["id": .string("m/\(index)"), "value": .int(index * 3)])]
            }
            for result in try settler.batch(entries) { _ = try result.get() }
        }
        let values = try await Promise.all(mirrors).value
        #expect(values == (0..<count).map { $0 * 3 })
        // Told once each: a second settled would find nothing to settle, but count it.
        _ = try await remote.call("info")
        #expect(settlements.load(ordering: .relaxed) == count)
    }

    @Test("cancelling a mirror leaves the daemon's promise pending; with cancellingRemote it cancels that too")
    func cancelLocal() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("keep")
        try await remote.create("stop")
        let keep = remote.promise("keep", as: Int.self)
        let stop = remote.promise("stop", as: Int.self, cancellingRemote: true)
        keep.cancel()
        stop.cancel()
        #expect(keep.isCancelled && stop.isCancelled)
        _ = try await remote.call("info")
        #expect(try await remote.get("keep").state == .pending)
        #expect(try await remote.get("stop").state == .cancelled)
        // A later mirror of the kept id still settles: the cancelled one unsubscribed only itself.
        let again = remote.promise("keep", as: Int.self)
        try await remote.resolve("keep", with: 5)
        #expect(try await again.value == 5)
    }

    @Test("a promise cancelled on the daemon cancels its mirror and what follows the mirror")
    func cancelRemote() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("job")
        let mirror = remote.promise("job", as: Int.self, cancellingRemote: true)
        let child = mirror.then { $0 + 1 }
        #expect(try daemon.ctl("cancel", "job").status == 0)
        await #expect(throws: CancellationError.self) { try await mirror.value }
        #expect(mirror.isCancelled)
        #expect(child.isCancelled)
    }

    @Test("progress reported on the daemon becomes the mirror's progress")
    func progressToMirror() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("long")
        let mirror = remote.promise("long", as: Int.self)
        let seen = Mutex<[Double]>([])
        mirror.onProgress(on: .inline) { fraction in seen.withLock { $0.append(fraction) } }
        _ = try await remote.call("info")
        #expect(try daemon.ctl("progress", "long", "0.25").status == 0)
        #expect(try daemon.ctl("progress", "long", "0.5", "halfway").status == 0)
        #expect(E2E.eventually(timeout: .seconds(10)) { mirror.progress == 0.5 })
        #expect(seen.withLock { $0 } == [0.25, 0.5])
        try await remote.resolve("long", with: 1)
        #expect(try await mirror.value == 1)
        #expect(mirror.progress == 1)
    }

    @Test("watch streams progress, then one settled per id, and ends after the last")
    func watchStream() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        try await remote.create("a")
        try await remote.resolve("a", with: 1)
        let events = remote.watch(["a", "b", "a"])
        _ = try await remote.call("info")
        try await remote.create("b")
        try await remote.reportProgress("b", 0.5, message: "half")
        try await remote.reject("b", message: "no")

        var seen: [String] = []
        for try await event in events {
            switch event {
            case .settled(let record): seen.append("\(record.id) \(record.state.rawValue)")
            case .progress(let id, let fraction, let message): seen.append("\(id) \(fraction) \(message ?? "-")")
            }
        }
        #expect(seen == ["a fulfilled", "b 0.5 half", "b rejected"])
    }

    @Test("a watch refused by the daemon throws its typed error")
    func watchRefused() async throws {
        let (daemon, remote) = try await E2EDaemon.connected()
        defer { remote.close(); daemon.stop() }
        let error = await #expect(throws: PromiseConnectionError.self) {
            for try await _ in remote.watch(["bad\u{1}id"]) {}
        }
        #expect(error?.code == .invalidParams)
    }

    @Test("closing the connection rejects pending mirrors and ends watches with closed")
    func closeEndsMirrors() async throws {
        let daemon = try E2EDaemon()
        defer { daemon.stop() }
        let remote = try await PromiseConnection.connect(socketPath: daemon.socketPath)
        let mirror = remote.promise("never", as: Int.self)
        let events = remote.watch(["never"])
        remote.close()
        let mirrorError = await #expect(throws: PromiseConnectionError.self) { try await mirror.value }
        #expect(mirrorError?.code == .closed)
        let watchError = await #expect(throws: PromiseConnectionError.self) { for try await _ in events {} }
        #expect(watchError?.code == .closed)
    }
}
