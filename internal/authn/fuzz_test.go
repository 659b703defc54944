package authn

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/request"
)

// FuzzTokenFile checks the token file parser against an independent reading
// of the same CSV: every record with a non-empty token maps that token to
// the last such record's user, and errors carry only the two message forms
// (never file content).
func FuzzTokenFile(f *testing.F) {
	for _, seed := range []string{
		"",
		"tok,user,uid\n",
		"tok,user,uid,\"g1,g2\"\n",
		"tok,user,uid,g1,extra,columns\n",
		",user,uid\n",
		"a,u1,1\na,u2,2\n",
		"tok,user\n",
		"tok\n",
		"to\"k,user,uid\n",
		"\"tok,user,uid\n",
		"tok,user,uid\r\n\r\nnext,u,2\n",
		"\xff\xfe,u,1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, _, err := parseTokenFile("tokens.csv", bytes.NewReader(data))
		want, wantErr := referenceTokens(data)
		if (err != nil) != wantErr {
			t.Fatalf("parser error %v, reference error %v", err, wantErr)
		}
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "token file 'tokens.csv' must have at least 3 columns") &&
				!strings.Contains(msg, "parse error on line") {
				t.Fatalf("unexpected error form %q", msg)
			}
			var tfe *TokenFileError
			if !errors.As(err, &tfe) || tfe.Line < 1 {
				t.Fatalf("error %v names no line", err)
			}
			return
		}
		if len(set) != len(want) {
			t.Fatalf("%d tokens, reference %d", len(set), len(want))
		}
		for token, w := range want {
			u, ok := set.lookup(token)
			if !ok || u.Name != w.Name || u.UID != w.UID || !slices.Equal(u.Groups, w.Groups) {
				t.Fatalf("token %q: %+v, reference %+v", token, u, w)
			}
		}
	})
}

// referenceTokens reads data as kube-apiserver's token file with plain maps.
func referenceTokens(data []byte) (map[string]request.User, bool) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	out := map[string]request.User{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, false
		}
		if err != nil || len(rec) < 3 {
			return nil, true
		}
		if rec[0] == "" {
			continue
		}
		u := request.User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 {
			u.Groups = strings.Split(rec[3], ",")
		}
		out[rec[0]] = u
	}
}

// kubeBearerToken is kube-apiserver's header parsing, transcribed as the
// oracle for bearerToken.
func kubeBearerToken(header string) (string, bool) {
	auth := strings.TrimSpace(header)
	if auth == "" {
		return "", false
	}
	parts := strings.Split(auth, " ")
	if len(parts) < 2 || strings.ToLower(parts[0]) != "bearer" {
		return "", false
	}
	return parts[1], parts[1] != ""
}

// FuzzBearerHeader drives the whole chain with arbitrary Authorization
// headers: the token read must be kube's, a known token must give its user
// with system:authenticated, an unknown one a 401 error and never
// anonymous, and no header with no token may be anything but anonymous.
func FuzzBearerHeader(f *testing.F) {
	for _, seed := range []string{
		"", "Bearer good-token", "bearer good-token", "BEARER good-token", "Bearer  good-token",
		"Bearer good-token extra", " Bearer good-token ", "Bearer", "Bearer ", "Basic Zm9vOmJhcg==",
		"Bearer bad-token", "Bearer\tgood-token", "Bearer good-token\x00", "bEaReR\u00a0good-token",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	path := dir + "/tokens.csv"
	if err := writeFile(path, "good-token,tess,uid-t,devs\n"); err != nil {
		f.Fatal(err)
	}
	chain, err := New(Config{TokenFile: path, Anonymous: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, header string) {
		got, gotOK := bearerToken(header)
		want, wantOK := kubeBearerToken(header)
		if got != want || gotOK != wantOK {
			t.Fatalf("bearerToken(%q) = %q,%v; kube reads %q,%v", header, got, gotOK, want, wantOK)
		}
		r, err := http.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header["Authorization"] = []string{header}
		u, ok, err := chain.AuthenticateRequest(r)
		switch {
		case !wantOK:
			if !ok || err != nil || u.Name != request.AnonymousUser {
				t.Fatalf("%q carries no token but gave %+v ok=%v err=%v", header, u, ok, err)
			}
		case want == "good-token":
			if !ok || err != nil || u.Name != "tess" || !slices.Equal(u.Groups, []string{"devs", request.AllAuthenticated}) {
				t.Fatalf("%q: %+v ok=%v err=%v, want tess", header, u, ok, err)
			}
		default:
			if ok || !errors.Is(err, ErrInvalidBearerToken) {
				t.Fatalf("%q: %+v ok=%v err=%v, want invalid bearer token", header, u, ok, err)
			}
		}
	})
}
