package objects

import (
	"bytes"
	"testing"
)

// memberDocs are documents the scanner must judge as the iterator does:
// FieldsV1 shapes, every JSON value kind, whitespace, duplicates, escapes
// and malformed input.
var memberDocs = []string{
	kubeletLeaseFields("6f1b2c3d-0000-4000-8000-00000000000a"),
	`{"f:spec":{"f:renewTime":{}},"f:metadata":{"f:labels":{"f:a":{}}}}`,
	` { "f:spec" : { "f:renewTime" : { } } , "f:x" : [ 1 , "a" ] } `,
	`{"f:spec":{}, "f:spec":{"f:other":{}}}`,
	`{"f:sp\u0065c":{"f:renewTime":{}}}`,
	`{"f:a":"x\"y\\z\/\b\f\n\r\t\u00e9","f:spec":{}}`,
	`{"f:a":[true,false,null,[],{}],"f:spec":{"k:{\"uid\":\"u\"}":{}}}`,
	`{"f:a":-1.5e+3,"f:spec":{}}`,
	`{}`,
	`[]`,
	`{"f:spec":{}`,
	`{"f:spec":{}}}`,
	`{"f:spec":{}} x`,
	`{"f:spec" {}}`,
	`{"f:spec":{},}`,
	`{"f:a":{"b":1 "c":2},"f:spec":{}}`,
	`{"f:a":"\q","f:spec":{}}`,
	`{"f:a":tru,"f:spec":{}}`,
	`{"f:a":"` + "\x01" + `","f:spec":{}}`,
	`{"f:a":[1,2,,3],"f:spec":{}}`,
	``,
}

// TestAppendMemberValueMatchesTheIterator checks the in-place scanner
// against the iterator it stands in for, and that it decides (without
// the iterator) the documents a fleet's renewals send it.
func TestAppendMemberValueMatchesTheIterator(t *testing.T) {
	for _, doc := range memberDocs {
		for _, name := range []string{"spec", "metadata", "a", "missing"} {
			want, wantOK := appendMemberValueIter([]byte("<"), []byte(doc), "f:"+name)
			got, gotOK := appendMemberValue([]byte("<"), []byte(doc), "f:", name)
			if gotOK != wantOK || (wantOK && !bytes.Equal(got, want)) {
				t.Errorf("member f:%s of %q: got %q, %v; the iterator says %q, %v", name, doc, got, gotOK, want, wantOK)
			}
		}
	}
	for _, doc := range memberDocs[:2] {
		if _, _, decided := scanMember([]byte(doc), "f:", "spec"); !decided {
			t.Errorf("scanMember left %q to the iterator", doc)
		}
	}
}

// TestAppendMemberValueAllocatesNothing pins the reason for scanMember: a
// kubelet's lease document, whose owner-reference key the iterator read
// through its slow path, is looked up without allocating.
func TestAppendMemberValueAllocatesNothing(t *testing.T) {
	raw := []byte(kubeletLeaseFields("6f1b2c3d-0000-4000-8000-00000000000a"))
	dst := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := appendMemberValue(dst[:0], raw, "f:", "spec"); !ok {
			t.Fatal("no f:spec member")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per lookup, want 0", allocs)
	}
}

// FuzzAppendMemberValue checks the scanner against the iterator on any
// input: the same verdict and, when found, the same bytes.
func FuzzAppendMemberValue(f *testing.F) {
	for _, doc := range memberDocs {
		f.Add(doc, "spec")
	}
	f.Fuzz(func(t *testing.T, doc, name string) {
		want, wantOK := appendMemberValueIter(nil, []byte(doc), "f:"+name)
		got, gotOK := appendMemberValue(nil, []byte(doc), "f:", name)
		if gotOK != wantOK || (wantOK && !bytes.Equal(got, want)) {
			t.Errorf("member f:%s of %q: got %q, %v; the iterator says %q, %v", name, doc, got, gotOK, want, wantOK)
		}
	})
}
