import Foundation

/// `promisectl list`'s table for people: one row per promise, columns
/// aligned under the header.
///
/// ```
/// ID          STATE      PID    STARTED   DURATION  EXIT  PROGRESS
/// build/lib   running    41235  14:02:11  12.4s           40% compiling
/// build/test  fulfilled         14:01:58  1.1s      0
/// ```
///
/// `list` follows the daemon's pages, which may hold a few rows each (a
/// page is bounded in bytes, and a `--prefix` scan in candidates looked
/// at). The table holds rows back until ``bufferedRows`` have come or the
/// pages end, and sizes every column from them; rows past that are printed
/// as they come, with columns that only grow.
struct PromiseTable {
    static let header = ["ID", "STATE", "PID", "STARTED", "DURATION", "EXIT", "PROGRESS"]
    /// Rows held back to size the columns before anything is printed.
    static let bufferedRows = 1_000
    private var columns = TextColumns(header: PromiseTable.header)
    private var held: [[String]] = []
    private var printedHeader = false
    let timeZone: TimeZone

    init(timeZone: TimeZone = .current) {
        self.timeZone = timeZone
    }

    /// The cells of one row, in ``header`` order.
    func cells(of view: RecordView, now: Int64) -> [String] {
        [
            view.id,
            view.state,
            view.pid.map(String.init) ?? "",
            view.started.map { Format.clock(milliseconds: $0, now: now, timeZone: timeZone) } ?? "",
            view.duration(now: now).map { Format.duration(milliseconds: $0) } ?? "",
            view.exitStatus.map(String.init) ?? "",
            view.progressText,
        ]
    }

    /// The lines to print now for one more page of `views`: none while rows
    /// are held back, else the header (the first time) and the rows.
    mutating func lines(for views: [RecordView], now: Int64) -> [String] {
        let rows = views.map { cells(of: $0, now: now) }
        for row in rows { columns.fit(row) }
        if !printedHeader {
            held += rows
            return held.count < Self.bufferedRows ? [] : flush()
        }
        return rows.map(columns.line)
    }

    /// The lines still held back, header first (once the pages end).
    mutating func finish() -> [String] {
        printedHeader ? [] : flush()
    }

    private mutating func flush() -> [String] {
        printedHeader = true
        defer { held = [] }
        return [columns.line(Self.header)] + held.map(columns.line)
    }
}
