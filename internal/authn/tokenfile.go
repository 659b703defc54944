package authn

import (
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/leasehold/leasehold/internal/request"
)

// tokenSet maps the SHA-256 of each static token to its user. Tokens are
// looked up by hash so that the lookup's timing depends on the hash, which
// tells an attacker nothing about the tokens, and so that the tokens
// themselves are not kept in memory after parsing. A tokenSet is immutable.
type tokenSet map[[sha256.Size]byte]request.User

// TokenFileError is a token file that cannot be used. Its message is
// Kubernetes' (kube-apiserver refuses to start with the same text); Line
// names the offending line for reload warnings.
type TokenFileError struct {
	Line int
	Err  error
}

func (e *TokenFileError) Error() string { return e.Err.Error() }
func (e *TokenFileError) Unwrap() error { return e.Err }

// tokenWarning is a record that parsing skipped or overrode, with
// Kubernetes' wording.
type tokenWarning struct {
	Line    int
	Message string
}

// parseTokenFile reads kube-apiserver's --token-auth-file format: CSV
// records "token,user,uid[,groups]" where groups is one comma-separated
// field (quote it), and further columns are ignored. A record with an empty
// token is skipped with a warning; a duplicate token overrides the earlier
// record with a warning. path only names the file in messages.
func parseTokenFile(path string, r io.Reader) (tokenSet, []tokenWarning, error) {
	tokens := make(tokenSet)
	var warnings []tokenWarning
	reader := csv.NewReader(r)
	reader.FieldsPerRecord = -1
	recordNum := 0
	for {
		record, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			return nil, warnings, &TokenFileError{Line: line, Err: err}
		}
		line, _ := reader.FieldPos(0)
		if len(record) < 3 {
			return nil, warnings, &TokenFileError{Line: line, Err: fmt.Errorf(
				"token file '%s' must have at least 3 columns (token, user name, user uid), found %d", path, len(record))}
		}
		recordNum++
		if record[0] == "" {
			warnings = append(warnings, tokenWarning{Line: line, Message: fmt.Sprintf(
				"empty token has been found in token file '%s', record number '%d'", path, recordNum)})
			continue
		}
		key := sha256.Sum256([]byte(record[0]))
		if _, dup := tokens[key]; dup {
			warnings = append(warnings, tokenWarning{Line: line, Message: fmt.Sprintf(
				"duplicate token has been found in token file '%s', record number '%d'", path, recordNum)})
		}
		u := request.User{Name: record[1], UID: record[2]}
		if len(record) >= 4 {
			u.Groups = strings.Split(record[3], ",")
		}
		tokens[key] = u
	}
	return tokens, warnings, nil
}

// lookup returns the user of token.
func (s tokenSet) lookup(token string) (request.User, bool) {
	u, ok := s[sha256.Sum256([]byte(token))]
	return u, ok
}
