/// `count` characters from "#" (0x23) to "[" (0x5B), in turn: printable
/// ASCII with no quote or backslash, so that JSON writes them as they are.
/// For tests of the readers that take such strings (ids, keys) without
/// making a `String`, at every length around their 8-byte steps.
package func printableText(count: Int) -> String {
    String((0..<count).map { Character(UnicodeScalar(UInt8(0x23 + $0 % 57))) })
}
