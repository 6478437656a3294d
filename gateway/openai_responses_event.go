package gateway

import "encoding/json"

// responsesEvent is what the gateway reads of a Responses API stream event. Its tags say how
// json.Unmarshal would fill it, which decodeResponsesEvent does by hand: a delta event (text,
// reasoning summary, a call's arguments) comes per token or two, tens of thousands an answer.
type responsesEvent struct {
	Type string `json:"type"`
	// Delta is the piece a delta event adds, read in place (chunkText).
	Delta    chunkText               `json:"delta"`
	Response *responsesEventResponse `json:"response"`
}

// responsesEventResponse is the response that response.created, .in_progress, .completed
// and .incomplete carry: the whole answer and its usage, at the end.
type responsesEventResponse struct {
	Model             string            `json:"model"`
	Output            []json.RawMessage `json:"output"`
	Usage             *openAIUsage      `json:"usage"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// The JSON names of responsesEvent's fields, in the order decodeResponsesEvent numbers them,
// and the event types its Type is most often: read without making a string of each.
var (
	responsesEventNames = []string{"type", "delta", "response"}
	responsesEventTypes = []string{"response.output_text.delta", "response.reasoning_summary_text.delta",
		"response.function_call_arguments.delta", "response.custom_tool_call_input.delta", "response.reasoning_text.delta"}
)

// decodeResponsesEvent is json.Unmarshal(data, ev) == nil into a zero ev, read in one pass
// as decodeChatChunk reads a chunk (see there): the same fields matched the same way, any
// value of a wrong type or text that is not JSON making the event unreadable. The response a
// few events carry is read by reflection (decodeRare). Its tests check it against
// json.Unmarshal.
func decodeResponsesEvent(data []byte, ev *responsesEvent) bool {
	i, f, ok := objectField(data, skipSpace(data, 0), 0, responsesEventNames, true)
	for ok && f >= 0 {
		switch f {
		case 0:
			i, ok = decodeName(data, i, &ev.Type, responsesEventTypes)
		case 1:
			i, ok = decodeText(data, i, &ev.Delta)
		default:
			i, ok = decodeRare(data, i, 1, &ev.Response)
		}
		if ok {
			i, f, ok = objectField(data, i, 0, responsesEventNames, false)
		}
	}
	return ok && skipSpace(data, i) == len(data)
}
