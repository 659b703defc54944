package bench

import (
	"bytes"
	"crypto/rand"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/leasehold/leasehold/internal/request"
)

// NodeTokens are static bearer tokens, one per simulated node, kept in a
// file in kube-apiserver's --token-auth-file format (CSV records
// "token,user,uid,groups"): the node named N is user system:node:N in group
// system:nodes, as a kubelet's client certificate would make it. A server
// started with --token-auth-file on the same file authenticates every
// renewal as the node whose lease it renews, so the Node authorizer and
// NodeRestriction judge it as they judge a kubelet's.
//
// Tokens, rather than one client certificate per node, because a
// certificate belongs to a TLS connection and the generator carries
// thousands of nodes' renewals on a handful of connections, as Kubernetes'
// own integration tests do with static tokens.
type NodeTokens struct {
	path   string
	byNode map[string]authorization
	added  int
	// lastAdded is the node whose token EnsureNodeTokens wrote last.
	lastAdded string
}

// nodeTokenUID is the uid column of a node's record: the file format needs
// one, and nothing reads it back.
func nodeTokenUID(node string) string { return "leasehold-bench:" + node }

// EnsureNodeTokens reads the token file at path (missing is empty) and gives
// every node in nodes that has no token there a new random one, rewriting
// the file (mode 0600, replaced by rename so that a server polling it never
// reads half a file) with the records it had, in order, and the new ones
// after them. Records of other users are kept as they are. A node's token
// is the last record for system:node:<node> in group system:nodes, as the
// last of duplicate tokens wins in kube-apiserver.
func EnsureNodeTokens(path string, nodes []string) (*NodeTokens, error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading node tokens: %w", err)
	}
	t := &NodeTokens{path: path}
	if t.byNode, err = parseNodeTokens(path, old); err != nil {
		return nil, err
	}
	var added bytes.Buffer
	w := csv.NewWriter(&added)
	for _, node := range nodes {
		if _, ok := t.byNode[node]; ok {
			continue
		}
		token := rand.Text()
		user := request.NodeUserPrefix + node
		if err := w.Write([]string{token, user, nodeTokenUID(node), request.NodesGroup}); err != nil {
			return nil, fmt.Errorf("writing the token of node %s: %w", node, err)
		}
		t.byNode[node] = bearer(token)
		t.added++
		t.lastAdded = node
	}
	w.Flush()
	if t.added == 0 {
		return t, nil
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	if err := writeFileAtomic(path, append(old, added.Bytes()...)); err != nil {
		return nil, fmt.Errorf("writing node tokens: %w", err)
	}
	return t, nil
}

// parseNodeTokens returns the node tokens in a token file's content. Only
// what kube-apiserver would refuse to start with is an error.
func parseNodeTokens(path string, data []byte) (map[string]authorization, error) {
	byNode := map[string]authorization{}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	for {
		record, err := r.Read()
		if errors.Is(err, io.EOF) {
			return byNode, nil
		}
		if err != nil {
			return nil, fmt.Errorf("token file %s: %w", path, err)
		}
		if len(record) < 3 {
			return nil, fmt.Errorf("token file '%s' must have at least 3 columns (token, user name, user uid), found %d", path, len(record))
		}
		node, isNode := strings.CutPrefix(record[1], request.NodeUserPrefix)
		if record[0] == "" || !isNode || len(record) < 4 || !slices.Contains(strings.Split(record[3], ","), request.NodesGroup) {
			continue
		}
		byNode[node] = bearer(record[0])
	}
}

// writeFileAtomic replaces path with data, mode 0600, through a temporary
// file in the same directory.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Path is the token file: start the server with --token-auth-file on it.
func (t *NodeTokens) Path() string { return t.path }

// Added is how many tokens EnsureNodeTokens wrote: a server already running
// on the file knows them only once it has read it again.
func (t *NodeTokens) Added() int { return t.added }

// probeSlot is a slot for awaitNodeToken to ask about: the node whose token
// was written last (a server that knows it has read the file that holds all
// of them), or if none was written, last (one of the run's nodes).
func (t *NodeTokens) probeSlot(last string) (*leaseSlot, error) {
	name := last
	if t.lastAdded != "" {
		name = t.lastAdded
	}
	auth, err := t.authorization(name)
	if err != nil {
		return nil, err
	}
	return &leaseSlot{name: name, auth: auth}, nil
}

// authorization is node's Authorization header, or an error naming the node
// if the file holds no token for it.
func (t *NodeTokens) authorization(node string) (authorization, error) {
	a, ok := t.byNode[node]
	if !ok {
		return nil, fmt.Errorf("no token for node %s in %s", node, t.path)
	}
	return a, nil
}
