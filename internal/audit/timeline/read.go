package timeline

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/leasehold/leasehold/internal/audit"
	"github.com/leasehold/leasehold/internal/audit/logbackend"
)

// Filter narrows a timeline; zero fields do not filter.
type Filter struct {
	User  string
	Verb  string
	Since time.Time
	Until time.Time
	Code  int
}

// Entry is one request in a timeline.
type Entry struct {
	Time        time.Time `json:"time"`
	User        string    `json:"user"`
	Verb        string    `json:"verb"`
	Resource    string    `json:"resource"`
	Subresource string    `json:"subresource,omitempty"`
	Namespace   string    `json:"namespace,omitempty"`
	Name        string    `json:"name"`
	Code        int32     `json:"code"`
	Decision    string    `json:"decision,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Message     string    `json:"message,omitempty"`
	UserAgent   string    `json:"userAgent,omitempty"`
	SourceIPs   []string  `json:"sourceIPs,omitempty"`
	AuditID     string    `json:"auditID"`
	Level       string    `json:"level"`
	Stage       string    `json:"stage"`
	File        string    `json:"file"`
}

// Result is a timeline and what reading it skipped.
type Result struct {
	Entries []Entry
	// Skipped counts lines that were not audit events (or not JSON).
	Skipped int
}

// Files returns the log at path and its rotated files, oldest first.
func Files(path string) ([]string, error) {
	backups, err := logbackend.Backups(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, b := range backups {
		files = append(files, b.Path)
	}
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	} else if len(files) == 0 {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return files, nil
}

// Read builds obj's timeline from the log at path and its rotated files.
func Read(path string, obj Object, f Filter) (*Result, error) {
	files, err := Files(path)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	byID := map[string]int{}
	for _, file := range files {
		if err := readFile(file, obj.related(), res, byID); err != nil {
			return nil, err
		}
	}
	// Filter once each request is down to its last stage, so a filter on
	// the code judges the final answer.
	kept := res.Entries[:0]
	for _, e := range res.Entries {
		if f.pass(&e) {
			kept = append(kept, e)
		}
	}
	res.Entries = kept
	sort.SliceStable(res.Entries, func(i, j int) bool { return res.Entries[i].Time.Before(res.Entries[j].Time) })
	return res, nil
}

// stageRank orders the stages of one request: a later stage says more.
var stageRank = map[string]int{
	string(auditv1.StageRequestReceived): 1, string(auditv1.StageResponseStarted): 2,
	string(auditv1.StageResponseComplete): 3, string(auditv1.StagePanic): 4,
}

func readFile(file string, objs []Object, res *Result, byID map[string]int) error {
	fh, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(file, ".gz") {
		zr, err := gzip.NewReader(fh)
		if err != nil {
			return fmt.Errorf("audit log %s: %w", file, err)
		}
		defer zr.Close()
		r = zr
	}
	names := make([][]byte, len(objs))
	for i, o := range objs {
		names[i] = []byte(o.Name)
	}
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			consider(line, file, objs, names, res, byID)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit log %s: %w", file, err)
		}
	}
}

// consider adds the event on line to the timeline if it is about one of
// objs and passes f.
func consider(line []byte, file string, objs []Object, names [][]byte, res *Result, byID map[string]int) {
	// Most lines are about other objects: skip them before decoding.
	mentioned := false
	for _, n := range names {
		if bytes.Contains(line, n) {
			mentioned = true
			break
		}
	}
	if !mentioned {
		return
	}
	var ev auditv1.Event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Kind != "Event" {
		res.Skipped++
		return
	}
	about := false
	for _, o := range objs {
		if o.matches(ev.ObjectRef) {
			about = true
			break
		}
	}
	if !about {
		return
	}
	e := entryOf(&ev, file)
	if i, ok := byID[e.AuditID]; ok && e.AuditID != "" {
		if stageRank[e.Stage] > stageRank[res.Entries[i].Stage] {
			res.Entries[i] = e
		}
		return
	}
	byID[e.AuditID] = len(res.Entries)
	res.Entries = append(res.Entries, e)
}

func entryOf(ev *auditv1.Event, file string) Entry {
	e := Entry{
		Time: ev.RequestReceivedTimestamp.UTC(), User: ev.User.Username, Verb: ev.Verb,
		Resource: ev.ObjectRef.Resource, Subresource: ev.ObjectRef.Subresource,
		Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name,
		Decision: ev.Annotations[audit.DecisionAnnotation], Reason: ev.Annotations[audit.ReasonAnnotation],
		UserAgent: ev.UserAgent, SourceIPs: ev.SourceIPs,
		AuditID: string(ev.AuditID), Level: string(ev.Level), Stage: string(ev.Stage), File: file,
	}
	if s := ev.ResponseStatus; s != nil {
		e.Code, e.Message = s.Code, s.Message
	}
	return e
}

func (f Filter) pass(e *Entry) bool {
	return (f.User == "" || e.User == f.User) &&
		(f.Verb == "" || e.Verb == f.Verb) &&
		(f.Code == 0 || int(e.Code) == f.Code) &&
		(f.Since.IsZero() || !e.Time.Before(f.Since)) &&
		(f.Until.IsZero() || !e.Time.After(f.Until))
}
