package embedded

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func TestStallLogReportsEachStallWithItsDuration(t *testing.T) {
	var out bytes.Buffer
	l := (&stallLog{log: slog.New(slog.NewJSONHandler(&out, nil))}).listener()
	l.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	time.Sleep(20 * time.Millisecond)
	l.WriteStallEnd()

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a line at the start and one at the end of the stall, got %q", out.String())
	}
	var begin, end map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &begin); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &end); err != nil {
		t.Fatal(err)
	}
	if begin["level"] != "WARN" || begin["reason"] != "memtable count limit reached" {
		t.Errorf("stall start logged as %v", begin)
	}
	d, err := time.ParseDuration(end["duration"].(string))
	if err != nil || d < 20*time.Millisecond || d > 10*time.Second {
		t.Errorf("stall end logged duration %v (%v), want about 20ms", end["duration"], err)
	}
}
