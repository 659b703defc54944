package timeline

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// TimeFormat is how the text timeline prints times: UTC, microseconds, as
// the audit log's own timestamps.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// WriteText prints the timeline for people: one line per request, repeats
// of the same request (user, verb, object, code, reason) in a row folded
// into the first with a count and the last time.
func WriteText(w io.Writer, obj Object, entries []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "TIME\tUSER\tVERB\tOBJECT\tCODE\tREPEATS\tALLOWED BY\n")
	for i := 0; i < len(entries); {
		e := entries[i]
		j := i + 1
		for j < len(entries) && sameRequest(&e, &entries[j]) {
			j++
		}
		repeats := ""
		if n := j - i; n > 1 {
			repeats = fmt.Sprintf("x%d until %s", n, entries[j-1].Time.Format(TimeFormat))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Format(TimeFormat), e.User, e.Verb,
			objectColumn(obj, &e), codeColumn(&e), repeats, allowedBy(&e))
		i = j
	}
	return tw.Flush()
}

// WriteJSON prints the timeline for tools: a JSON array of every entry,
// nothing folded.
func WriteJSON(w io.Writer, entries []Entry) error {
	if entries == nil {
		entries = []Entry{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(entries)
}

func sameRequest(a, b *Entry) bool {
	return a.User == b.User && a.Verb == b.Verb && a.Resource == b.Resource && a.Subresource == b.Subresource &&
		a.Namespace == b.Namespace && a.Name == b.Name && a.Code == b.Code && a.Decision == b.Decision && a.Reason == b.Reason
}

// objectColumn names the entry's object briefly: its resource (and
// subresource), in full only when it is not the object asked about or its
// namesake (a node's lease).
func objectColumn(obj Object, e *Entry) string {
	s := e.Resource
	if e.Subresource != "" {
		s += "/" + e.Subresource
	}
	if e.Name != obj.Name {
		s += " " + Object{Resource: e.Resource, Namespace: e.Namespace, Name: e.Name}.String()
	}
	return s
}

func codeColumn(e *Entry) string {
	if e.Code == 0 {
		return "-"
	}
	return strconv.Itoa(int(e.Code))
}

// allowedBy is the reason the authorizer gave, or its bare decision when
// it gave none; "-" for requests never authorized (failed authentication).
func allowedBy(e *Entry) string {
	switch {
	case e.Reason != "" && e.Decision != "" && e.Decision != "allow":
		return e.Decision + ": " + e.Reason
	case e.Reason != "":
		return e.Reason
	case e.Decision != "":
		return e.Decision
	}
	return "-"
}

// ParseTime parses a --since/--until value: an RFC 3339 time, or a
// duration meaning that long before now.
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration", s)
	}
	return now.Add(-d), nil
}
