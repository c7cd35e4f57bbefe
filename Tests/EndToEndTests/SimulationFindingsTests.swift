import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseTestSupport
import Testing
#if canImport(Glibc)
import Glibc
import PromiseClient
#endif

/// The smallest reproductions of what the simulation found that issue 22
/// does not list. Each runs when its ``KnownDefect`` is no longer avoided
/// (`SIMULATION_INCLUDE=<name>` or `all`), so that it can be turned on with
/// the simulation's switch once the fix is merged.
@Suite("What the simulation found")
struct SimulationFindingsTests {
    static func included(_ defect: KnownDefect) -> Bool {
        !SimulationOptions(seed: 0, steps: 0).avoiding.contains(defect)
    }

    @Test("SIGTERM while a connection holding a pending leased promise is open stops the daemon with status 0",
          .enabled(if: included(.leaseOpenAtStop)))
    func stopWithOpenLease() throws {
        let daemon = try E2EDurableDaemon.started(extraArguments: ["--lease-grace", "0"])
        defer { daemon.remove() }
        let client = try SimulationSocket(path: daemon.socketPath)
        client.send(Array(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"held","lease":true}}"#.utf8))
        let answer = try #require(client.readLine(milliseconds: 5_000))
        #expect(try JSONValue(parsing: answer)["result"]?["state"] == "pending")

        let status = daemon.terminate(grace: .seconds(10))
        #expect(status == 0, "promised ended with \(status.map(String.init) ?? "no exit"); log: \(daemon.logTail(600))")

        // The lease expired at the stop and was stored, or the restart expires it.
        try daemon.start()
        let record = try #require(try daemon.record("held"))
        #expect(record.state == .rejected)
    }
}
