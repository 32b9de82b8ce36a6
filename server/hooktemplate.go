package server

import "strings"

// Template makes the body a hook POSTs from a notification: its event,
// its data, and link, the console's page of its thread ("" without
// Config.PublicURL). Its value is sent as JSON.
type Template func(event string, data map[string]any, link string) (any, error)

// SlackTemplate is the body of a Slack incoming webhook, {"text": ...}:
// what happened, naming the agent, rule, tool and thread, and a link to
// the thread in the console when the server knows its public URL.
func SlackTemplate(event string, data map[string]any, link string) (any, error) {
	str := func(k string) string { s, _ := data[k].(string); return s }
	var b strings.Builder
	b.WriteString(slackHeadline(event, data))
	b.WriteString(": agent *" + slackEscape(str("agent")) + "*")
	if r := str("rule"); r != "" {
		b.WriteString(", rule `" + slackEscape(r) + "`")
	}
	if t := str("tool"); t != "" {
		b.WriteString(", tool `" + slackEscape(t) + "`")
	}
	b.WriteString(", thread `" + slackEscape(str("thread_id")) + "`")
	if e := str("error"); e != "" {
		b.WriteString(": " + slackEscape(e))
	}
	if link != "" {
		b.WriteString(" <" + link + "|open in the console>")
	}
	return map[string]any{"text": b.String()}, nil
}

// slackHeadline says what event is, with a decision's verdict and who
// gave it.
func slackHeadline(event string, data map[string]any) string {
	h := map[string]string{EventApprovalRequested: "Approval requested", EventApprovalDecided: "Approval decided",
		EventApprovalExpired: "Approval expired", EventRunCompleted: "Run completed", EventRunFailed: "Run failed"}[event]
	if h == "" {
		h = event
	}
	if d, _ := data["decision"].(string); d != "" && event != EventApprovalRequested {
		h += " (" + slackEscape(d)
		if p, _ := data["principal"].(string); p != "" {
			h += " by " + slackEscape(p)
		}
		h += ")"
	}
	return h
}

// slackEscape escapes the characters Slack's text gives a meaning to.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
