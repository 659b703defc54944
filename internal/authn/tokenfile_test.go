package authn

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/request"
)

func TestParseTokenFile(t *testing.T) {
	const path = "/etc/tokens.csv"
	content := strings.Join([]string{
		`admin-token,admin,uid-1,"system:masters,devs"`,
		`ro-token,viewer,uid-2`,
		`,nobody,uid-3`,
		`ro-token,viewer2,uid-4,readers,ignored-extra-column`,
		``,
		`plain-token,plain,uid-5,single`,
	}, "\n") + "\n"
	set, warnings, err := parseTokenFile(path, strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]request.User{
		"admin-token": {Name: "admin", UID: "uid-1", Groups: []string{"system:masters", "devs"}},
		"ro-token":    {Name: "viewer2", UID: "uid-4", Groups: []string{"readers"}}, // the later record wins
		"plain-token": {Name: "plain", UID: "uid-5", Groups: []string{"single"}},
	}
	if len(set) != len(want) {
		t.Fatalf("parsed %d tokens, want %d", len(set), len(want))
	}
	for token, w := range want {
		u, ok := set.lookup(token)
		if !ok || u.Name != w.Name || u.UID != w.UID || !slices.Equal(u.Groups, w.Groups) {
			t.Fatalf("token %q: %+v ok=%v, want %+v", token, u, ok, w)
		}
	}
	if _, ok := set.lookup(""); ok {
		t.Fatalf("the empty token authenticates")
	}
	wantWarnings := []tokenWarning{
		{Line: 3, Message: "empty token has been found in token file '/etc/tokens.csv', record number '3'"},
		{Line: 4, Message: "duplicate token has been found in token file '/etc/tokens.csv', record number '4'"},
	}
	if !slices.Equal(warnings, wantWarnings) {
		t.Fatalf("warnings %+v, want %+v", warnings, wantWarnings)
	}
}

func TestParseTokenFileErrors(t *testing.T) {
	const path = "/etc/tokens.csv"
	cases := []struct {
		name, content string
		line          int
		want          string
	}{
		{"two columns", "good,user,uid\ntoken,user\n", 2,
			"token file '/etc/tokens.csv' must have at least 3 columns (token, user name, user uid), found 2"},
		{"one column", "token\n", 1,
			"token file '/etc/tokens.csv' must have at least 3 columns (token, user name, user uid), found 1"},
		{"bare quote", "good,user,uid\nto\"ken,user,uid\n", 2,
			"parse error on line 2, column 3: bare \" in non-quoted-field"},
		{"unterminated quote", "tok,user,uid,\"a,b\n", 1,
			"parse error on line 1, column 19: extraneous or missing \" in quoted-field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parseTokenFile(path, strings.NewReader(tc.content))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			tfe, ok := err.(*TokenFileError)
			if !ok || tfe.Line != tc.line {
				t.Fatalf("error %#v, want a TokenFileError on line %d", err, tc.line)
			}
		})
	}
}

func TestNewTokenFileStartupErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(bad, []byte("token,user\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log, _ := newTestLogger()
	_, err := NewTokenFile(bad, log, 0)
	want := "token file '" + bad + "' must have at least 3 columns (token, user name, user uid), found 2"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	missing := filepath.Join(dir, "absent.csv")
	if _, err := NewTokenFile(missing, log, 0); !os.IsNotExist(err) {
		t.Fatalf("missing file: error %v, want not-exist", err)
	}
	// With Config, the same errors stop the chain from being built.
	if _, err := New(Config{TokenFile: bad}); err == nil || err.Error() != want {
		t.Fatalf("New: error %v, want %q", err, want)
	}
}
