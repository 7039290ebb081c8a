/// Orders a Prometheus text exposition by metric family.
///
/// The registry emits families in the order of a dictionary, which changes as families are
/// created; sorted, two scrapes can be compared line by line. A family is its `# HELP` and
/// `# TYPE` lines and the samples after them.
enum PrometheusExposition {
    static func sortedByFamily(_ exposition: [UInt8]) -> [UInt8] {
        var families: [(name: Substring, lines: [Substring])] = []
        let text = String(decoding: exposition, as: UTF8.self)
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                let name = line.dropFirst(7).prefix { $0 != " " }
                if families.last?.name != name { families.append((name, [])) }
            } else if families.isEmpty {
                families.append(("", []))
            }
            families[families.count - 1].lines.append(line)
        }
        families.sort { $0.name < $1.name }
        var out = families.flatMap(\.lines).joined(separator: "\n")
        out += "\n"
        return Array(out.utf8)
    }
}
