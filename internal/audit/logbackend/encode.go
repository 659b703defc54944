package logbackend

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// appendEvent appends ev as one JSON line, byte for byte what
// encoding/json's Encoder writes for it (TestAppendEventIsEncodingJSON and
// FuzzAppendEvent compare the two).
//
// Why by hand: encoding/json walks the Event by reflection and calls
// MicroTime's MarshalJSON (which marshals again) for both timestamps. It
// took about 9.7 µs for a small Metadata event on a loaded 2-core machine,
// and a renewal audited at Metadata writes two events, which made the
// backend's goroutine the largest cost of auditing a renewal. The fields
// every event has (strings, the user, the objectRef, timestamps,
// annotations) are appended here; the rare, nested ones (responseStatus
// beyond its code, request and response objects, the impersonated user,
// authentication metadata) go through encoding/json, each on its own.
func appendEvent(b []byte, ev *auditv1.Event) ([]byte, error) {
	w := objectWriter{b: append(b, '{'), first: true}
	w.str("kind", ev.Kind, true)
	w.str("apiVersion", ev.APIVersion, true)
	w.str("level", string(ev.Level), false)
	w.str("auditID", string(ev.AuditID), false)
	w.str("stage", string(ev.Stage), false)
	w.str("requestURI", ev.RequestURI, false)
	w.str("verb", ev.Verb, false)
	w.field("user")
	w.b = appendUser(w.b, &ev.User)
	if ev.ImpersonatedUser != nil {
		w.nested("impersonatedUser", ev.ImpersonatedUser)
	}
	if ev.AuthenticationMetadata != nil {
		w.nested("authenticationMetadata", ev.AuthenticationMetadata)
	}
	if len(ev.SourceIPs) > 0 {
		w.field("sourceIPs")
		w.b = appendStrings(w.b, ev.SourceIPs)
	}
	w.str("userAgent", ev.UserAgent, true)
	if r := ev.ObjectRef; r != nil {
		w.field("objectRef")
		ref := objectWriter{b: append(w.b, '{'), first: true}
		ref.str("resource", r.Resource, true)
		ref.str("namespace", r.Namespace, true)
		ref.str("name", r.Name, true)
		ref.str("uid", string(r.UID), true)
		ref.str("apiGroup", r.APIGroup, true)
		ref.str("apiVersion", r.APIVersion, true)
		ref.str("resourceVersion", r.ResourceVersion, true)
		ref.str("subresource", r.Subresource, true)
		w.b = append(ref.b, '}')
	}
	if s := ev.ResponseStatus; s != nil {
		if codeOnly(s) {
			// What nearly every successful request logs.
			w.field("responseStatus")
			w.b = append(w.b, `{"metadata":{},"code":`...)
			w.b = strconv.AppendInt(w.b, int64(s.Code), 10)
			w.b = append(w.b, '}')
		} else {
			w.nested("responseStatus", s)
		}
	}
	if ev.RequestObject != nil {
		w.nested("requestObject", ev.RequestObject)
	}
	if ev.ResponseObject != nil {
		w.nested("responseObject", ev.ResponseObject)
	}
	if w.err != nil {
		return nil, w.err
	}
	w.field("requestReceivedTimestamp")
	w.b = appendMicroTime(w.b, ev.RequestReceivedTimestamp)
	w.field("stageTimestamp")
	w.b = appendMicroTime(w.b, ev.StageTimestamp)
	if len(ev.Annotations) > 0 {
		w.field("annotations")
		w.b = appendStringMap(w.b, ev.Annotations)
	}
	return append(w.b, '}', '\n'), nil
}

// objectWriter appends one JSON object's members.
type objectWriter struct {
	b     []byte
	first bool
	err   error
}

func (w *objectWriter) field(name string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = append(w.b, '"')
	w.b = append(w.b, name...)
	w.b = append(w.b, '"', ':')
}

func (w *objectWriter) str(name, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	w.field(name)
	w.b = appendString(w.b, v)
}

// nested appends v as encoding/json encodes it.
func (w *objectWriter) nested(name string, v any) {
	if w.err != nil {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		w.err = err
		return
	}
	w.field(name)
	w.b = append(w.b, raw...)
}

// codeOnly reports whether s has nothing but a code (its ListMeta empty).
func codeOnly(s *metav1.Status) bool {
	return s.Code != 0 && s.TypeMeta == (metav1.TypeMeta{}) && s.ListMeta == (metav1.ListMeta{}) &&
		s.Status == "" && s.Message == "" && s.Reason == "" && s.Details == nil
}

func appendUser(b []byte, u *authnv1.UserInfo) []byte {
	w := objectWriter{b: append(b, '{'), first: true}
	w.str("username", u.Username, true)
	w.str("uid", u.UID, true)
	if len(u.Groups) > 0 {
		w.field("groups")
		w.b = appendStrings(w.b, u.Groups)
	}
	if len(u.Extra) > 0 {
		w.field("extra")
		w.b = append(w.b, '{')
		for i, k := range sortedKeys(u.Extra) {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendString(w.b, k)
			w.b = append(w.b, ':')
			if v := u.Extra[k]; v == nil {
				w.b = append(w.b, "null"...)
			} else {
				w.b = appendStrings(w.b, v)
			}
		}
		w.b = append(w.b, '}')
	}
	return append(w.b, '}')
}

// sortedKeys returns m's keys in order, as encoding/json writes a map; the
// two annotations every authorized request has fit on the stack.
func sortedKeys[V any](m map[string]V) []string {
	var small [4]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// appendMicroTime is metav1.MicroTime's JSON: null when zero, else the
// time in UTC with microseconds.
func appendMicroTime(b []byte, t metav1.MicroTime) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, metav1.RFC3339Micro)
	return append(b, '"')
}

const hex = "0123456789abcdef"

// appendString appends s as encoding/json quotes it by default: HTML's
// <, > and & escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029
// escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
