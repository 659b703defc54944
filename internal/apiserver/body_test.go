package apiserver

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestReadBodyAgainstContentLength(t *testing.T) {
	big := strings.Repeat("x", MaxRequestBodyBytes+10)
	cases := map[string]struct {
		body          io.Reader
		contentLength int64
		want          string
		wantCode      int32
	}{
		"exact":                      {strings.NewReader("hello"), 5, "hello", 0},
		"in one-byte reads":          {iotest.OneByteReader(strings.NewReader("hello")), 5, "hello", 0},
		"longer than announced":      {strings.NewReader("hello world"), 5, "hello world", 0},
		"unannounced":                {strings.NewReader("hello"), -1, "hello", 0},
		"shorter than announced":     {strings.NewReader("hel"), 5, "", 400},
		"announced over the limit":   {strings.NewReader("x"), MaxRequestBodyBytes + 1, "", 413},
		"grows past the limit":       {strings.NewReader(big), 5, "", 413},
		"unannounced over the limit": {strings.NewReader(big), -1, "", 413},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("PUT", "/", tc.body)
			r.ContentLength = tc.contentLength
			got, err := readBody(r)
			if tc.wantCode != 0 {
				var st apierrors.APIStatus
				if !errors.As(err, &st) || st.Status().Code != tc.wantCode {
					t.Fatalf("got %v, want a %d", err, tc.wantCode)
				}
				return
			}
			if err != nil || !bytes.Equal(got, []byte(tc.want)) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if tc.contentLength == int64(len(tc.want)) && cap(got) != len(got) {
				t.Errorf("an announced body got a buffer of %d bytes for %d", cap(got), len(got))
			}
		})
	}
}
