@testable import PromiseRPC
import Testing

@Suite("HugePages")
struct HugePagesTests {
    /// A buffer at `address` of `count` bytes, never read or written: only its bounds are used.
    private func buffer(at address: Int, count: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: address), count: count)
    }

    @Test("only the whole 2 MB pages inside a buffer are advised, from the first boundary after its start to the last before its end")
    func advisesWholePagesOnly() throws {
        let page = HugePages.size
        #expect(page == 2 << 20)
        let unaligned = try #require(HugePages.wholePages(in: buffer(at: 7 * page + 4096, count: 5 * page)))
        #expect(Int(bitPattern: unaligned.baseAddress) == 8 * page)
        #expect(unaligned.count == 4 * page)
        let aligned = try #require(HugePages.wholePages(in: buffer(at: 3 * page, count: 2 * page + 100)))
        #expect(Int(bitPattern: aligned.baseAddress) == 3 * page)
        #expect(aligned.count == 2 * page)
    }

    @Test("a buffer under two huge pages long is left alone")
    func leavesSmallBuffersAlone() {
        let page = HugePages.size
        #expect(HugePages.wholePages(in: buffer(at: 5 * page, count: 2 * page - 1)) == nil)
        #expect(HugePages.wholePages(in: buffer(at: 5 * page + 16, count: page + 4096)) == nil)
        #expect(HugePages.wholePages(in: UnsafeMutableRawBufferPointer(start: nil, count: 0)) == nil)
    }
}
