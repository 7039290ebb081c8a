public import RelayCore

/// Decodes the body of `POST /v1/events`: a JSON array of events, or NDJSON (one event per line).
/// All or nothing: every problem is reported with the event's index, and no event is returned
/// unless all are valid.
public enum EventBatchDecoder {
    /// One refused event of a batch.
    public struct Problem: Sendable, Hashable {
        /// 0-based position of the event in the batch (`nil` when the body itself is malformed).
        public var index: Int?
        /// The field at fault, if one is.
        public var field: String?
        /// The rule that was broken.
        public var message: String

        /// A problem of the event at `index` (`nil`: the whole body), in `field` if one is at fault.
        public init(index: Int?, field: String?, message: String) {
            self.index = index
            self.field = field
            self.message = message
        }
    }

    /// Every problem of a refused batch.
    public struct Problems: Error, Sendable, Hashable {
        /// The problems, in batch order.
        public var list: [Problem]
    }

    /// The events of `body`, or every problem found: those of syntax, and those of events
    /// `admission` does not take, in batch order.
    public static func decode(
        _ body: [UInt8], defaultTime: EventTime, maximumEvents: Int, admission: EventAdmission = .anyEvent
    ) -> Result<[Event], Problems> {
        let scanned = body.withUnsafeBufferPointer {
            TrackingBatchScanner.events(in: $0, defaultTime: defaultTime, maximumEvents: maximumEvents, admission: admission)
        }
        if let scanned { return .success(scanned) }
        return decodeInGeneral(body, defaultTime: defaultTime, maximumEvents: maximumEvents, admission: admission)
    }

    /// ``decode(_:defaultTime:maximumEvents:admission:)`` without ``TrackingBatchScanner``: every
    /// body through the JSON parser and ``EventDecoder`` (what the scanner is checked against).
    package static func decodeInGeneral(
        _ body: [UInt8], defaultTime: EventTime, maximumEvents: Int, admission: EventAdmission = .anyEvent
    ) -> Result<[Event], Problems> {
        guard let first = body.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else {
            return .failure(
                Problems(list: [Problem(index: nil, field: nil, message: "the body is empty: send a JSON array of events or one event per line")]))
        }
        var problems: [Problem] = []
        var events: [Event] = []
        if first == UInt8(ascii: "[") {
            let document: JSONValue
            do {
                document = try JSONParser.parse(body)
            } catch {
                return .failure(Problems(list: [Problem(index: nil, field: nil, message: error.description)]))
            }
            guard case .array(let elements) = document else {
                return .failure(Problems(list: [Problem(index: nil, field: nil, message: "expected a JSON array")]))
            }
            guard elements.count <= maximumEvents else {
                return .failure(
                    Problems(list: [Problem(index: nil, field: nil, message: "\(elements.count) events in one request; at most \(maximumEvents)")]))
            }
            for (index, element) in elements.enumerated() {
                do {
                    let event = try EventDecoder.decode(element, defaultTime: defaultTime)
                    problems += admission.problems(of: event).map { Problem(index: index, field: $0.field, message: $0.message) }
                    events.append(event)
                } catch {
                    problems.append(Problem(index: index, field: error.field, message: error.message))
                }
            }
        } else {
            let decoded = EventLines.decode(body, defaultTime: defaultTime)
            guard decoded.events.count + decoded.rejections.count <= maximumEvents else {
                return .failure(
                    Problems(list: [
                        Problem(
                            index: nil, field: nil,
                            message: "\(decoded.events.count + decoded.rejections.count) events in one request; at most \(maximumEvents)")
                    ]))
            }
            // NDJSON indexes count events (non-blank lines), like the array form.
            var index = 0
            var rejections = decoded.rejections[...]
            var nextEvent = 0
            let lines = body.split(separator: 0x0A, omittingEmptySubsequences: false)
            for (offset, line) in lines.enumerated() where !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
                if let rejection = rejections.first, rejection.line == offset + 1 {
                    problems.append(Problem(index: index, field: rejection.error.field, message: rejection.error.message))
                    rejections = rejections.dropFirst()
                } else if nextEvent < decoded.events.count, decoded.eventLines[nextEvent] == offset + 1 {
                    problems += admission.problems(of: decoded.events[nextEvent]).map { Problem(index: index, field: $0.field, message: $0.message) }
                    nextEvent += 1
                }
                index += 1
            }
            events = decoded.events
            // One event pretty-printed is refused line by line above, in words that do not say
            // why ("line 1: invalid JSON"): one problem naming the forms taken says it instead.
            if !problems.isEmpty, first == UInt8(ascii: "{"), isOneObjectOverSeveralLines(body) {
                problems = [Problem(index: nil, field: nil, message: Self.objectOverSeveralLines)]
            }
        }
        return problems.isEmpty ? .success(events) : .failure(Problems(list: problems))
    }

    /// The problem of a body that is one JSON object written over several lines.
    public static let objectOverSeveralLines =
        "the body is one JSON object written over several lines, which is not NDJSON (one event per line): put the event on one line, or send it in an array, [{…}], as application/json"

    /// Whether `body` is one JSON object (and nothing else) on more than one non-blank line.
    private static func isOneObjectOverSeveralLines(_ body: [UInt8]) -> Bool {
        let lines = body.split(separator: 0x0A).filter { !$0.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } }
        guard lines.count > 1, case .object? = try? JSONParser.parse(body) else { return false }
        return true
    }
}
