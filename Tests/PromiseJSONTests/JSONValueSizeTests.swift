import PromiseJSON
import Testing

@Suite("JSONValue: serialized byte count")
struct JSONValueSizeTests {
    @Test("the count is the length of the serialized text, escapes, keys and punctuation included",
          arguments: [
            .null, true, false, 0, -7, .int(Int.max), .int(Int.min), 0.0, 1.0, "", "plain", "quote \" and \\ slash",
            "\n\r\t\u{0}\u{1F}", "ünïcødé ✓ 🎉", [], [:], [1, "two", [3, [4]], ["k": nil]],
            ["a": "x\n", "b": [1, true], "é\n": ["": []]],
            .number(JSONNumber("18446744073709551615")!), [.number(JSONNumber("-1.5e400")!)],
          ] as [JSONValue])
    func exactCount(value: JSONValue) {
        #expect(value.serializedByteCount() == value.serialized().count)
    }

    @Test("a double with a fraction or an exponent is counted as the longest a double can be written",
          arguments: [0.5, -2.2250738585072014e-308, 1e300, .pi, -0.0, .infinity, .nan] as [Double])
    func doublesAreNeverUndercounted(number: Double) {
        let value = JSONValue.double(number)
        #expect(value.serializedByteCount() >= value.serialized().count)
        #expect(value.serializedByteCount() <= 24)
    }

    @Test("past the limit the walk stops, with a count over the limit")
    func stopsPastLimit() {
        let big = JSONValue.string(String(repeating: "x", count: 1 << 20))
        let value = JSONValue.array(Array(repeating: big, count: 100_000))  // 100 GB of text, never written
        let count = value.serializedByteCount(upTo: 16 << 20)
        #expect(count > 16 << 20)
        #expect(count < 18 << 20)
        #expect(JSONValue.array([big, big]).serializedByteCount(upTo: 3 << 20) == 2 * (1 << 20) + 7)
    }
}
