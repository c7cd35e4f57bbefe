/// Rows of cells laid out in columns for a terminal: each cell padded to
/// its column's width, two spaces apart, the last column not padded and no
/// trailing spaces. Widths are counted in characters.
struct TextColumns {
    private(set) var widths: [Int]

    /// Columns as wide as the header's names.
    init(header: [String]) {
        widths = header.map(\.count)
    }

    /// Widens the columns to hold `row`.
    mutating func fit(_ row: [String]) {
        for (column, cell) in row.enumerated() where column < widths.count {
            widths[column] = max(widths[column], cell.count)
        }
    }

    /// `cells` padded to the widths.
    func line(_ cells: [String]) -> String {
        var text = ""
        for (column, cell) in cells.enumerated() {
            if column > 0 { text += "  " }
            text += cell
            if column < cells.count - 1, column < widths.count {
                text += String(repeating: " ", count: max(0, widths[column] - cell.count))
            }
        }
        while text.last == " " { text.removeLast() }
        return text
    }

    /// `header` then `rows`, every column as wide as its widest cell.
    static func lines(header: [String], rows: [[String]]) -> [String] {
        var columns = TextColumns(header: header)
        for row in rows { columns.fit(row) }
        return ([header] + rows).map(columns.line)
    }
}
