package respond

import "testing"

func TestParseAcceptOrder(t *testing.T) {
	got := ParseAccept(`text/plain;q=0.2, application/*;q=0.9, */*;q=0.9, application/json;q=0.9;pretty=1, bad/, application/yaml;q=2, application/cbor`)
	want := []string{"application/cbor", "application/json", "application/*", "*/*", "text/plain"}
	if len(got) != len(want) {
		t.Fatalf("ParseAccept kept %d clauses %+v, want %v", len(got), got, want)
	}
	for i, c := range got {
		if c.Type+"/"+c.Subtype != want[i] {
			t.Errorf("clause %d = %s/%s, want %s", i, c.Type, c.Subtype, want[i])
		}
	}
	if got[1].Params["pretty"] != "1" || got[1].Params["q"] != "" {
		t.Errorf("params of application/json = %v, want pretty=1 and no q", got[1].Params)
	}
}
