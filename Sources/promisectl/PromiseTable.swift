import Foundation

/// `promisectl list`'s table for people: one row per promise, columns
/// aligned, the header printed once.
///
/// ```
/// ID          STATE      PID    STARTED   DURATION  EXIT  PROGRESS
/// build/lib   running    41235  14:02:11  12.4s           40% compiling
/// build/test  fulfilled         14:01:58  1.1s      0
/// ```
///
/// `list` follows the daemon's pages and prints each page as it comes, so
/// the widths are those of the rows seen so far: they grow, never shrink.
struct PromiseTable {
    static let header = ["ID", "STATE", "PID", "STARTED", "DURATION", "EXIT", "PROGRESS"]
    private var widths = PromiseTable.header.map(\.count)
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

    /// The lines for `views` (after the header, the first time).
    mutating func lines(for views: [RecordView], now: Int64) -> [String] {
        let rows = views.map { cells(of: $0, now: now) }
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        var lines: [String] = []
        if !printedHeader {
            printedHeader = true
            lines.append(line(Self.header))
        }
        lines += rows.map(line)
        return lines
    }

    /// Cells padded to their column's width, two spaces apart; the last
    /// column is not padded, and trailing spaces are dropped.
    private func line(_ cells: [String]) -> String {
        var text = ""
        for (column, cell) in cells.enumerated() {
            if column > 0 { text += "  " }
            text += cell
            if column < cells.count - 1 { text += String(repeating: " ", count: widths[column] - cell.count) }
        }
        while text.last == " " { text.removeLast() }
        return text
    }
}
