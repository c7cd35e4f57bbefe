import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
import PromiseRegistry
import Testing

@Suite("Registry: list and info")
struct RegistryListInfoTests {
    private func ids(_ result: JSONValue) -> [String] {
        result["promises"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
    }

    @Test("list returns every record in creation order, with a null cursor when done")
    func listAll() {
        let harness = RPCHarness()
        let peer = harness.connect()
        for id in ["c", "a", "b"] { harness.call("create", ["id": .string(id)], from: peer) }
        let result = harness.call("list", from: peer)
        #expect(ids(result) == ["c", "a", "b"])
        #expect(result["cursor"] == .null)
        #expect(result["promises"]?.arrayValue?.first?["state"] == "pending")
    }

    @Test("list gives each promise the record get gives, values, children and details included, and a string cursor")
    func listRecordsAreGetRecords() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "plain"], from: peer)
        harness.call("create", ["id": "named", "name": "the build"], from: peer)
        harness.call("resolve", ["id": "named", "value": ["files": [1, 2, 3], "big": .string(String(repeating: "x", count: 5_000))]], from: peer)
        harness.call("then", ["id": "named", "childId": "child"], from: peer)
        harness.call("reject", ["id": "plain", "message": "no"], from: peer)
        let page = harness.call("list", ["limit": 2], from: peer)
        #expect(ids(page) == ["plain", "named"])
        #expect(page["cursor"]?.stringValue != nil)
        let rest = harness.call("list", ["cursor": page["cursor"] ?? .null], from: peer)
        #expect(rest["cursor"] == .null)
        let records = (page["promises"]?.arrayValue ?? []) + (rest["promises"]?.arrayValue ?? [])
        #expect(records.count == 3)
        for record in records {
            #expect(record == harness.call("get", ["id": record["id"] ?? .null], from: peer))
        }
    }

    @Test("list filters by state and prefix")
    func listFilters() {
        let harness = RPCHarness()
        let peer = harness.connect()
        for id in ["build/a", "build/b", "test/a", "build/c"] { harness.call("create", ["id": .string(id)], from: peer) }
        harness.call("resolve", ["id": "build/b"], from: peer)
        harness.call("cancel", ["id": "build/c"], from: peer)
        #expect(ids(harness.call("list", ["prefix": "build/"], from: peer)) == ["build/a", "build/b", "build/c"])
        #expect(ids(harness.call("list", ["prefix": "build/", "state": "pending"], from: peer)) == ["build/a"])
        #expect(ids(harness.call("list", ["state": "fulfilled"], from: peer)) == ["build/b"])
        #expect(ids(harness.call("list", ["state": "cancelled"], from: peer)) == ["build/c"])
        #expect(ids(harness.call("list", ["state": "rejected"], from: peer)) == [])
    }

    @Test("list pages with limit and cursor until the cursor is null")
    func listPages() {
        let harness = RPCHarness()
        let peer = harness.connect()
        for index in 0..<7 { harness.call("create", ["id": .string("p-\(index)")], from: peer) }
        harness.call("create", ["id": "other"], from: peer)
        var seen: [String] = []
        var cursor: JSONValue = .null
        var pages = 0
        repeat {
            var params: [String: JSONValue] = ["limit": 3, "prefix": "p-"]
            if cursor != .null { params["cursor"] = cursor }
            let result = harness.call("list", .object(params), from: peer)
            seen += ids(result)
            cursor = result["cursor"] ?? .null
            pages += 1
        } while cursor != .null && pages < 10
        #expect(seen == (0..<7).map { "p-\($0)" })
        #expect(pages == 3)
    }

    @Test("a list whose filter matches little looks at limit + 1,000 promises, then ends its page short with a cursor that goes on")
    func listScanIsBounded() {
        let harness = RPCHarness()
        let peer = harness.connect()
        for index in 0..<2_500 { harness.call("create", ["id": .string("n\(index)")], from: peer) }
        harness.call("create", ["id": "wanted"], from: peer)
        let first = harness.call("list", ["prefix": "wanted", "limit": 10], from: peer)
        #expect(ids(first) == [])
        #expect(first["cursor"] == "1009")
        let second = harness.call("list", ["prefix": "wanted", "limit": 10, "cursor": first["cursor"] ?? .null], from: peer)
        #expect(ids(second) == [])
        let third = harness.call("list", ["prefix": "wanted", "limit": 10, "cursor": second["cursor"] ?? .null], from: peer)
        #expect(ids(third) == ["wanted"])
        #expect(third["cursor"] == .null)
    }

    @Test("a list page ends before its records would pass maxValueBytes, and the cursor goes on from there")
    func listPageBytesAreBounded() {
        var limits = DaemonLimits()
        limits.maxValueBytes = 1_000
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        let value = JSONValue.string(String(repeating: "v", count: 300))
        for index in 0..<10 {
            harness.call("create", ["id": .string("big\(index)")], from: peer)
            harness.call("resolve", ["id": .string("big\(index)"), "value": value], from: peer)
        }
        var seen: [String] = []
        var cursor: JSONValue = .null
        var pages: [Int] = []
        repeat {
            var params: [String: JSONValue] = ["limit": 100]
            if cursor != .null { params["cursor"] = cursor }
            let result = harness.call("list", .object(params), from: peer)
            seen += ids(result)
            pages.append(ids(result).count)
            cursor = result["cursor"] ?? .null
        } while cursor != .null && pages.count < 20
        #expect(seen == (0..<10).map { "big\($0)" })
        // About 400 bytes a record: a third would pass 1,000.
        #expect(pages == [2, 2, 2, 2, 2])
    }

    @Test("list compares the prefix byte for byte: a decomposed accent does not match a precomposed one")
    func listPrefixByBytes() {
        let harness = RPCHarness()
        let peer = harness.connect()
        harness.call("create", ["id": "caf\u{E9}/1"], from: peer)
        harness.call("create", ["id": "cafe\u{301}/2"], from: peer)
        #expect(ids(harness.call("list", ["prefix": "caf\u{E9}"], from: peer)) == ["caf\u{E9}/1"])
        #expect(ids(harness.call("list", ["prefix": "cafe\u{301}"], from: peer)) == ["cafe\u{301}/2"])
        // "cafe" is a byte prefix of the decomposed id only.
        #expect(ids(harness.call("list", ["prefix": "cafe"], from: peer)) == ["cafe\u{301}/2"])
    }

    @Test("a page that ends exactly at the last match has a null cursor")
    func listExactPage() {
        let harness = RPCHarness()
        let peer = harness.connect()
        for id in ["a", "b"] { harness.call("create", ["id": .string(id)], from: peer) }
        #expect(harness.call("list", ["limit": 2], from: peer)["cursor"] == .null)
    }

    @Test("info reports version, protocol 1, counts and every limit")
    func info() {
        var limits = DaemonLimits()
        limits.maxPromises = 77
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        harness.call("create", from: peer)
        let info = harness.call("info", from: peer)
        #expect(info["version"]?.stringValue?.isEmpty == false)
        #expect(info["protocol"] == 1)
        #expect(info["promises"] == 1)
        #expect(info["connections"] == 1)
        #expect(info["limits"] == limits.json)
        #expect(info["limits"]?["maxPromises"] == 77)
    }

    @Test("forget drops settled promises, keeps pending ones, ignores unknown ids")
    func forget() {
        let harness = RPCHarness()
        let peer = harness.connect()
        for id in ["a", "b", "c"] { harness.call("create", ["id": .string(id)], from: peer) }
        harness.call("resolve", ["id": "a"], from: peer)
        harness.call("cancel", ["id": "c"], from: peer)
        let result = harness.call("forget", ["ids": ["a", "b", "c", "ghost"]], from: peer)
        #expect(result == ["forgotten": 2, "pending": ["b"], "needed": []])
        #expect(harness.errorCode("get", ["id": "a"], from: peer) == -32001)
        #expect(ids(harness.call("list", from: peer)) == ["b"])
        #expect(harness.call("info", from: peer)["promises"] == 1)
        #expect(harness.call("create", ["id": "a"], from: peer)["state"] == "pending")
        #expect(harness.errorCode("forget", ["ids": "a"], from: peer) == -32602)
    }

    @Test("forget frees room under maxPromises, and list pages stay right after many are forgotten")
    func forgetFreesRoom() {
        var limits = DaemonLimits()
        limits.maxPromises = 200
        let harness = RPCHarness(limits: limits)
        let peer = harness.connect()
        for index in 0..<200 { harness.call("create", ["id": .string("p\(index)")], from: peer) }
        #expect(harness.errorCode("create", from: peer) == -32004)
        let first = harness.call("list", ["limit": 5], from: peer)
        // Enough to make the registry compact its creation-order index.
        let gone = (0..<200).filter { ($0 % 2 == 0 && $0 >= 6) || $0 < 4 || $0 > 150 }.map { JSONValue.string("p\($0)") }
        for id in gone { harness.call("resolve", ["id": id], from: peer) }
        #expect(harness.call("forget", ["ids": .array(gone)], from: peer)["forgotten"]?.intValue == gone.count)
        #expect(harness.call("create", ["id": "new"], from: peer)["state"] == "pending")
        let next = harness.call("list", ["limit": 5, "cursor": first["cursor"] ?? .null], from: peer)
        #expect(ids(next) == ["p5", "p7", "p9", "p11", "p13"])
    }
}
