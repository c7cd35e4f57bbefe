import Foundation
import PromiseModel
import PromiseRPC
import Testing

/// Numbers a double would change come back as they were written: past the
/// double range either way, among its subnormals, past 64 bits, past 15
/// digits; through the socket, through promisectl, and through a restart.
@Suite("numbers as written, end to end")
struct NumberTextTests {
    static let written = "[1e-400,3e-324,-2.5E-999,0.00001e-320,5e-324,1e400,-1E+400,18446744073709551615,0.1]"

    @Test("numbers below and above the double range keep their text through resolve, get, wait and a kill -9 restart")
    func numbersKeepTheirText() throws {
        try E2EDurableDaemon.with { daemon in
            let raw = try E2ERawConnection(path: daemon.socketPath)
            raw.writeLine(#"{"jsonrpc":"2.0","id":1,"method":"create","params":{"id":"raw"}}"#)
            raw.writeLine(#"{"jsonrpc":"2.0","id":2,"method":"resolve","params":{"id":"raw","value":"# + Self.written + "}}")
            _ = try raw.readMessage()
            let resolved = try #require(raw.readLine())
            #expect(String(decoding: resolved, as: UTF8.self).contains(#""value":"# + Self.written), "\(resolved)")
            #expect(try daemon.ctl(["create", "ctl"]).status == 0)
            #expect(try daemon.ctl(["resolve", "ctl", Self.written]).status == 0)

            for round in ["before the restart", "after the restart"] {
                for id in ["raw", "ctl"] {
                    let waited = try daemon.ctl(["wait", id])
                    #expect(waited.stdout == Self.written + "\n", "\(id) \(round): \(waited)")
                    let got = try daemon.ctl(["get", id])
                    #expect(got.stdout == "fulfilled " + Self.written + "\n", "\(id) \(round): \(got)")
                }
                if round == "before the restart" { try daemon.restart() }
            }
        }
    }
}
