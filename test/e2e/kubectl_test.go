package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	nodeLeaseNS = "kube-node-lease"
	// renewTime has trailing zeros on purpose: a MicroTime must still be
	// printed with exactly six fractional digits.
	renewTime = "2024-01-02T03:04:05.120000Z"
	// watchTimeout bounds the wait for one line of `kubectl get -w`.
	watchTimeout = 20 * time.Second
)

// leaseManifest is a node-style lease as a user would write it.
func leaseManifest(name, holder string, duration int) string {
	return fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: %s
  namespace: %s
spec:
  holderIdentity: %s
  leaseDurationSeconds: %d
  renewTime: %q
`, name, nodeLeaseNS, holder, duration, renewTime)
}

// TestKubectl runs the everyday kubectl verbs, for every kubectl version the
// machine ships, against a real `leasehold serve` process per version, and
// checks what kubectl prints.
func TestKubectl(t *testing.T) {
	for _, bin := range kubectlBinaries(t) {
		t.Run("kubectl-"+bin.Version, func(t *testing.T) {
			if bin.Path == "" {
				t.Skipf("SKIP: kubectl %s is not installed next to kubectl on this machine", bin.Version)
			}
			t.Parallel()
			srv := startServer(t)
			k := newKubectl(t, bin, srv)
			// The steps share the server and build on each other's objects.
			t.Run("create", func(t *testing.T) { testCreate(t, k) })
			t.Run("field-validation", func(t *testing.T) { testFieldValidation(t, k) })
			t.Run("get", func(t *testing.T) { testGet(t, k) })
			t.Run("describe", func(t *testing.T) { testDescribe(t, k) })
			t.Run("apply", func(t *testing.T) { testApply(t, k) })
			t.Run("apply-server-side", func(t *testing.T) { testServerSideApply(t, k) })
			t.Run("sort", func(t *testing.T) { testSort(t, k) })
			t.Run("edit", func(t *testing.T) { testEdit(t, k) })
			t.Run("label-annotate", func(t *testing.T) { testLabelAnnotate(t, k) })
			t.Run("patch", func(t *testing.T) { testPatch(t, k) })
			t.Run("watch", func(t *testing.T) { testWatch(t, k) })
			t.Run("api-resources", func(t *testing.T) { testAPIResources(t, k) })
			t.Run("explain", func(t *testing.T) { testExplain(t, k) })
			t.Run("delete", func(t *testing.T) { testDelete(t, k) })
		})
	}
}

// bind makes the runner report to the current subtest.
func bind(t *testing.T, k *kubectlRunner) *kubectlRunner {
	c := *k
	c.t = t
	return &c
}

func testCreate(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	file := writeFile(t, "node-1.yaml", leaseManifest("node-1", "node-1", 40))
	if out := k.run("create", "-f", file); strings.TrimSpace(out) != "lease.coordination.k8s.io/node-1 created" {
		t.Errorf("create printed %q", out)
	}
	stderr := k.fail("create", "-f", file)
	if !strings.Contains(stderr, `(AlreadyExists)`) || !strings.Contains(stderr, `leases.coordination.k8s.io "node-1" already exists`) {
		t.Errorf("second create: stderr %q, want AlreadyExists for leases.coordination.k8s.io \"node-1\"", stderr)
	}
	bad := writeFile(t, "bad.yaml", leaseManifest("bad", "x", 0))
	stderr = k.fail("create", "-f", bad)
	if !strings.Contains(stderr, `The Lease "bad" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`) {
		t.Errorf("create with leaseDurationSeconds 0: stderr %q, want the Invalid cause", stderr)
	}
}

// testFieldValidation checks kubectl's --validate modes, which it maps to
// the server's fieldValidation (kubectl finds the parameter in OpenAPI).
func testFieldValidation(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	file := writeFile(t, "unknown.yaml", `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: unknown-field
  namespace: default
spec:
  holderIdentity: x
  bogus: 1
`)
	stderr := k.fail("create", "--validate=strict", "-f", file)
	if !strings.Contains(stderr, "(BadRequest)") || !strings.Contains(stderr, `strict decoding error: unknown field "spec.bogus"`) {
		t.Errorf("create --validate=strict: stderr %q, want a BadRequest from the server naming spec.bogus", stderr)
	}
	for _, c := range []struct {
		mode     string
		warnings int
	}{{"warn", 1}, {"false", 0}} {
		r := k.exec("", nil, "create", "--validate="+c.mode, "-f", file)
		if r.Err != nil {
			t.Fatalf("create --validate=%s: %v\n%s", c.mode, r.Err, r.Stderr)
		}
		if n := strings.Count(r.Stderr, `Warning: unknown field "spec.bogus"`); n != c.warnings {
			t.Errorf("create --validate=%s: %d unknown-field warnings, want %d; stderr %q", c.mode, n, c.warnings, r.Stderr)
		}
		k.run("delete", "lease", "unknown-field", "-n", "default")
	}
}

func testGet(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	rows := tableRows(k.run("get", "lease", "-n", nodeLeaseNS))
	if len(rows) != 2 || !slices.Equal(rows[0], []string{"NAME", "HOLDER", "AGE"}) {
		t.Fatalf("get lease: rows %q, want header NAME HOLDER AGE and one lease", rows)
	}
	if r := rows[1]; len(r) != 3 || r[0] != "node-1" || r[1] != "node-1" || !ageRE.MatchString(r[2]) {
		t.Errorf("get lease: row %q, want node-1 node-1 AGE", r)
	}

	rows = tableRows(k.run("get", "lease", "-A"))
	if !slices.Equal(rows[0], []string{"NAMESPACE", "NAME", "HOLDER", "AGE"}) {
		t.Errorf("get -A header %q", rows[0])
	}
	if r := rowWith(rows, nodeLeaseNS); r == nil || r[1] != "node-1" || r[2] != "node-1" {
		t.Errorf("get -A: rows %q, want kube-node-lease node-1 node-1", rows)
	}

	// -o wide adds our priority-1 RENEW TIME and EXPIRES IN (negative once expired).
	rows = tableRows(k.run("get", "lease", "-n", nodeLeaseNS, "-o", "wide"))
	if r := rowWith(rows, "node-1"); !slices.Equal(rows[0], []string{"NAME", "HOLDER", "AGE", "RENEW", "TIME", "EXPIRES", "IN"}) || len(r) != 5 || r[3] != renewTime || !regexp.MustCompile(`^-[0-9]+[smhdy]([0-9]+[smhd])?$`).MatchString(r[4]) {
		t.Errorf("get -o wide: rows %q, want RENEW TIME %s and a negative EXPIRES IN", rows, renewTime)
	}

	// The server keeps its own leases in kube-system (its identity lease,
	// and the controller-manager and leader-election-controller election
	// leases, as kube-apiserver and kube-controller-manager do); the exact
	// listings look at the test's namespace.
	if out := k.run("get", "lease", "-n", nodeLeaseNS, "-o", "name"); strings.TrimSpace(out) != "lease.coordination.k8s.io/node-1" {
		t.Errorf("get -o name printed %q", out)
	}

	rows = tableRows(k.run("get", "lease", "-n", nodeLeaseNS, "-o",
		"custom-columns=NAME:.metadata.name,DURATION:.spec.leaseDurationSeconds,RENEW:.spec.renewTime"))
	if want := [][]string{{"NAME", "DURATION", "RENEW"}, {"node-1", "40", renewTime}}; !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("custom-columns: rows %q, want %q", rows, want)
	}

	out := k.run("get", "lease", "node-1", "-n", nodeLeaseNS, "-o", "yaml")
	if !strings.Contains(out, "renewTime: \""+renewTime+"\"") {
		t.Errorf("-o yaml: renewTime not in RFC 3339 micro form %s:\n%s", renewTime, out)
	}
	if strings.Contains(out, "managedFields") {
		t.Errorf("-o yaml without --show-managed-fields shows managedFields:\n%s", out)
	}
	lease := decodeYAMLLease(t, out)
	if h := lease.Spec.HolderIdentity; h == nil || *h != "node-1" {
		t.Errorf("-o yaml: holderIdentity %v, want node-1", h)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != 40 {
		t.Errorf("-o yaml: leaseDurationSeconds %v, want 40", d)
	}
	if lease.UID == "" || lease.ResourceVersion == "" || lease.CreationTimestamp.IsZero() {
		t.Errorf("-o yaml: metadata lacks uid, resourceVersion or creationTimestamp: %+v", lease.ObjectMeta)
	}

	lease = decodeYAMLLease(t, k.run("get", "lease", "node-1", "-n", nodeLeaseNS, "-o", "yaml", "--show-managed-fields"))
	if e := managedEntry(lease, "kubectl-create", "Update"); e == nil || !strings.Contains(fieldsOf(e), `"f:holderIdentity"`) {
		t.Errorf("--show-managed-fields: no kubectl-create Update entry owning spec.holderIdentity: %+v", lease.ManagedFields)
	}

	var list struct {
		Kind  string                 `json:"kind"`
		Items []coordinationv1.Lease `json:"items"`
	}
	out = k.run("get", "lease", "-n", nodeLeaseNS, "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, out)
	}
	if list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Name != "node-1" || list.Items[0].Kind != "Lease" ||
		list.Items[0].Spec.RenewTime == nil || list.Items[0].Spec.RenewTime.UTC().Format(time.RFC3339Nano) != "2024-01-02T03:04:05.12Z" {
		t.Errorf("-o json: %s", out)
	}

	stderr := k.fail("get", "lease", "nope", "-n", nodeLeaseNS)
	if !strings.Contains(stderr, `(NotFound)`) || !strings.Contains(stderr, `leases.coordination.k8s.io "nope" not found`) {
		t.Errorf("get missing lease: stderr %q", stderr)
	}
}

func testDescribe(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	out := k.run("describe", "lease", "node-1", "-n", nodeLeaseNS)
	for _, re := range []string{
		`(?m)^Name:\s+node-1$`,
		`(?m)^Namespace:\s+kube-node-lease$`,
		`(?m)^\s*Holder Identity:\s+node-1$`,
		`(?m)^\s*Lease Duration Seconds:\s+40$`,
		`(?m)^\s*Renew Time:\s+` + regexp.QuoteMeta(renewTime) + `$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("describe: no line matching %s in:\n%s", re, out)
		}
	}
}

func testApply(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	file := writeFile(t, "applied.yaml", leaseManifest("applied", "holder-a", 30))
	if out := k.run("apply", "-f", file); strings.TrimSpace(out) != "lease.coordination.k8s.io/applied created" {
		t.Errorf("apply (create) printed %q", out)
	}
	file = writeFile(t, "applied.yaml", leaseManifest("applied", "holder-b", 30))
	if out := k.run("apply", "-f", file); strings.TrimSpace(out) != "lease.coordination.k8s.io/applied configured" {
		t.Errorf("apply (change) printed %q", out)
	}
	if out := k.run("apply", "-f", file); strings.TrimSpace(out) != "lease.coordination.k8s.io/applied unchanged" {
		t.Errorf("apply (re-apply) printed %q", out)
	}
	lease := getLease(t, k, "applied", "--show-managed-fields")
	if h := lease.Spec.HolderIdentity; h == nil || *h != "holder-b" {
		t.Errorf("after apply: holderIdentity %v, want holder-b", h)
	}
	if last := lease.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !strings.Contains(last, `"holderIdentity":"holder-b"`) {
		t.Errorf("after apply: last-applied-configuration %q lacks the applied holder", last)
	}
	if managedEntry(lease, "kubectl-client-side-apply", "Update") == nil {
		t.Errorf("after apply: no kubectl-client-side-apply manager: %+v", lease.ManagedFields)
	}
}

func testServerSideApply(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	file := writeFile(t, "ssa.yaml", leaseManifest("ssa", "ssa-1", 15))
	if out := k.run("apply", "--server-side", "-f", file); strings.TrimSpace(out) != "lease.coordination.k8s.io/ssa serverside-applied" {
		t.Errorf("apply --server-side printed %q", out)
	}
	lease := getLease(t, k, "ssa", "--show-managed-fields")
	e := managedEntry(lease, "kubectl", "Apply")
	if e == nil {
		t.Fatalf("after apply --server-side: no Apply entry for manager kubectl: %+v", lease.ManagedFields)
	}
	for _, f := range []string{`"f:holderIdentity"`, `"f:leaseDurationSeconds"`, `"f:renewTime"`} {
		if !strings.Contains(fieldsOf(e), f) {
			t.Errorf("Apply entry %s lacks %s", fieldsOf(e), f)
		}
	}

	// Another manager changing an owned field conflicts, unless forced.
	other := writeFile(t, "ssa.yaml", leaseManifest("ssa", "ssa-2", 15))
	stderr := k.fail("apply", "--server-side", "--field-manager=other", "-f", other)
	if !strings.Contains(stderr, `conflict with "kubectl"`) || !strings.Contains(stderr, ".spec.holderIdentity") {
		t.Errorf("conflicting apply: stderr %q, want a conflict with \"kubectl\" on .spec.holderIdentity", stderr)
	}
	k.run("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", other)
	lease = getLease(t, k, "ssa", "--show-managed-fields")
	if h := lease.Spec.HolderIdentity; h == nil || *h != "ssa-2" {
		t.Errorf("after forced apply: holderIdentity %v, want ssa-2", h)
	}
	if e := managedEntry(lease, "other", "Apply"); e == nil || !strings.Contains(fieldsOf(e), `"f:holderIdentity"`) {
		t.Errorf("after forced apply: manager other does not own holderIdentity: %+v", lease.ManagedFields)
	}
	if e := managedEntry(lease, "kubectl", "Apply"); e == nil || strings.Contains(fieldsOf(e), `"f:holderIdentity"`) {
		t.Errorf("after forced apply: manager kubectl should keep its other fields but lose holderIdentity: %+v", lease.ManagedFields)
	}
}

// notIdentity selects every lease but the API server identity leases.
const notIdentity = "!apiserver.kubernetes.io/identity"

// testSort needs the server to honour includeObject=Object: kubectl sorts
// the Table rows by the objects they carry.
func testSort(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	out := k.run("get", "lease", "-A", "-l", notIdentity, "--field-selector", "metadata.namespace!=kube-system", "--sort-by=.spec.leaseDurationSeconds")
	rows := tableRows(out)
	if len(rows) == 0 {
		t.Fatalf("get --sort-by printed no table: %q", out)
	}
	var names []string
	for _, r := range rows[1:] {
		names = append(names, r[1])
	}
	if want := []string{"ssa", "applied", "node-1"}; !slices.Equal(names, want) {
		t.Errorf("get --sort-by=.spec.leaseDurationSeconds: rows %q, want names in order %q", rows, want)
	}
}

func testEdit(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	editor := writeFile(t, "editor.sh", "#!/bin/sh\nsed -i 's/^  holderIdentity: node-1$/  holderIdentity: edited-holder/' \"$1\"\n")
	if err := os.Chmod(editor, 0o700); err != nil {
		t.Fatalf("making the editor script executable: %v", err)
	}
	out := k.runWith("", []string{"KUBE_EDITOR=" + editor}, "edit", "lease", "node-1", "-n", nodeLeaseNS)
	if strings.TrimSpace(out) != "lease.coordination.k8s.io/node-1 edited" {
		t.Errorf("edit printed %q", out)
	}
	lease := getLease(t, k, "node-1", "--show-managed-fields")
	if h := lease.Spec.HolderIdentity; h == nil || *h != "edited-holder" {
		t.Errorf("after edit: holderIdentity %v, want edited-holder", h)
	}
	if e := managedEntry(lease, "kubectl-edit", "Update"); e == nil || !strings.Contains(fieldsOf(e), `"f:holderIdentity"`) {
		t.Errorf("after edit: kubectl-edit does not own holderIdentity: %+v", lease.ManagedFields)
	}
}

func testLabelAnnotate(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	if out := k.run("label", "lease", "node-1", "-n", nodeLeaseNS, "tier=gold"); strings.TrimSpace(out) != "lease.coordination.k8s.io/node-1 labeled" {
		t.Errorf("label printed %q", out)
	}
	// kubectl 1.27 itself prints "annotate" rather than "annotated" (its
	// own message; the server returns the same object to every version).
	annotated := "lease.coordination.k8s.io/node-1 annotated"
	if k.bin.Version == "1.27" {
		annotated = "lease.coordination.k8s.io/node-1 annotate"
	}
	if out := k.run("annotate", "lease", "node-1", "-n", nodeLeaseNS, "note=hello"); strings.TrimSpace(out) != annotated {
		t.Errorf("annotate printed %q, want %q", out, annotated)
	}
	lease := getLease(t, k, "node-1")
	if lease.Labels["tier"] != "gold" || lease.Annotations["note"] != "hello" {
		t.Errorf("after label/annotate: labels %v annotations %v", lease.Labels, lease.Annotations)
	}
	if out := k.run("get", "lease", "-A", "-l", "tier=gold", "-o", "name"); strings.TrimSpace(out) != "lease.coordination.k8s.io/node-1" {
		t.Errorf("get -l tier=gold printed %q", out)
	}
	if out := k.run("get", "lease", "-A", "-l", "tier=silver", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("get -l tier=silver printed %q, want nothing", out)
	}
	k.run("label", "lease", "node-1", "-n", nodeLeaseNS, "tier-")
	if lease := getLease(t, k, "node-1"); len(lease.Labels) != 0 {
		t.Errorf("after removing the label: labels %v", lease.Labels)
	}
}

func testPatch(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	name := []string{"lease", "node-1", "-n", nodeLeaseNS}
	patched := "lease.coordination.k8s.io/node-1 patched"
	if out := k.run(append([]string{"patch"}, append(name, "--type=merge", "-p", `{"spec":{"leaseDurationSeconds":41}}`)...)...); strings.TrimSpace(out) != patched {
		t.Errorf("merge patch printed %q", out)
	}
	if d := getLease(t, k, "node-1").Spec.LeaseDurationSeconds; d == nil || *d != 41 {
		t.Errorf("after merge patch: leaseDurationSeconds %v, want 41", d)
	}
	if out := k.run(append([]string{"patch"}, append(name, "--type=json", "-p", `[{"op":"add","path":"/spec/leaseTransitions","value":3}]`)...)...); strings.TrimSpace(out) != patched {
		t.Errorf("json patch printed %q", out)
	}
	if n := getLease(t, k, "node-1").Spec.LeaseTransitions; n == nil || *n != 3 {
		t.Errorf("after json patch: leaseTransitions %v, want 3", n)
	}
	if out := k.run(append([]string{"patch"}, append(name, "--type=strategic", "-p", `{"metadata":{"labels":{"patched":"yes"}},"spec":{"holderIdentity":"strategic"}}`)...)...); strings.TrimSpace(out) != patched {
		t.Errorf("strategic patch printed %q", out)
	}
	lease := getLease(t, k, "node-1")
	if h := lease.Spec.HolderIdentity; h == nil || *h != "strategic" || lease.Labels["patched"] != "yes" {
		t.Errorf("after strategic patch: holder %v labels %v", h, lease.Labels)
	}
	stderr := k.fail(append([]string{"patch"}, append(name, "--type=merge", "-p", `{"spec":{"leaseTransitions":-1}}`)...)...)
	if !strings.Contains(stderr, "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0") {
		t.Errorf("invalid patch: stderr %q, want the leaseTransitions cause", stderr)
	}
	stderr = k.fail(append([]string{"patch"}, append(name, "--type=json", "-p", `[{"op":"replace","path":"/spec/nothere/x","value":1}]`)...)...)
	if stderr == "" {
		t.Errorf("json patch of a missing path: no error message")
	}
}

func testWatch(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	w := k.stream("get", "lease", "node-1", "-n", nodeLeaseNS, "-w", "--output-watch-events")
	w.waitFor(watchTimeout, "the header", func(l string) bool {
		return slices.Equal(strings.Fields(l), []string{"EVENT", "NAME", "HOLDER", "AGE"})
	})
	w.waitFor(watchTimeout, "the initial ADDED row", func(l string) bool {
		f := strings.Fields(l)
		return len(f) == 4 && f[0] == "ADDED" && f[1] == "node-1"
	})
	k.run("patch", "lease", "node-1", "-n", nodeLeaseNS, "--type=merge", "-p", `{"spec":{"holderIdentity":"watched-holder"}}`)
	w.waitFor(watchTimeout, "a MODIFIED row with the new holder", func(l string) bool {
		f := strings.Fields(l)
		return len(f) == 4 && f[0] == "MODIFIED" && f[1] == "node-1" && f[2] == "watched-holder"
	})
	w.stop()

	// A bounded JSON watch: --request-timeout ends it by itself.
	out := k.run("get", "lease", "-n", nodeLeaseNS, "-w", "-o", "json", "--request-timeout=2s")
	dec := json.NewDecoder(strings.NewReader(out))
	var names []string
	for dec.More() {
		var l coordinationv1.Lease
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("get -w -o json: %v in:\n%s", err, out)
		}
		names = append(names, l.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"applied", "node-1", "ssa"}) {
		t.Errorf("get -w -o json listed %q, want applied node-1 ssa", names)
	}
}

func testAPIResources(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	rows := tableRows(k.run("api-resources"))
	if r := rowWith(rows, "leases"); !slices.Equal(r, []string{"leases", "coordination.k8s.io/v1", "true", "Lease"}) {
		t.Errorf("api-resources: leases row %q, want leases coordination.k8s.io/v1 true Lease", r)
	}
	rows = tableRows(k.run("api-resources", "--api-group=coordination.k8s.io", "-o", "wide"))
	r := rowWith(rows, "leases")
	if len(r) < 5 || r[4] != "create,delete,deletecollection,get,list,patch,update,watch" {
		t.Errorf("api-resources -o wide: leases row %q, want all eight verbs", r)
	}
	if out := k.run("api-resources", "--namespaced=true", "-o", "name"); !slices.Contains(strings.Fields(out), "leases.coordination.k8s.io") {
		t.Errorf("api-resources --namespaced -o name: %q lacks leases.coordination.k8s.io", out)
	}
}

func testExplain(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	out := k.run("explain", "lease")
	for _, re := range []string{`(?m)^KIND:\s+Lease$`, `(?m)^\s+spec\s+<(LeaseSpec|Object)>$`, `(?m)^\s+metadata\s+<(ObjectMeta|Object)>$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("explain lease: no line matching %s in:\n%s", re, out)
		}
	}
	out = k.run("explain", "lease.spec")
	for field, typ := range map[string]string{
		"holderIdentity": "string", "leaseDurationSeconds": "integer", "acquireTime": "string",
		"renewTime": "string", "leaseTransitions": "integer",
	} {
		if !regexp.MustCompile(`(?m)^\s+` + field + `\s+<` + typ + `>$`).MatchString(out) {
			t.Errorf("explain lease.spec: no %s <%s> in:\n%s", field, typ, out)
		}
	}
	if !strings.Contains(out, "holderIdentity contains the identity of the holder of a current lease") {
		t.Errorf("explain lease.spec lacks the holderIdentity description:\n%s", out)
	}
}

func testDelete(t *testing.T, k *kubectlRunner) {
	k = bind(t, k)
	out := k.run("delete", "lease", "node-1", "-n", nodeLeaseNS)
	if !strings.HasPrefix(strings.TrimSpace(out), `lease.coordination.k8s.io "node-1" deleted`) {
		t.Errorf("delete printed %q", out)
	}
	stderr := k.fail("get", "lease", "node-1", "-n", nodeLeaseNS)
	if !strings.Contains(stderr, `leases.coordination.k8s.io "node-1" not found`) {
		t.Errorf("get after delete: stderr %q", stderr)
	}
	stderr = k.fail("delete", "lease", "node-1", "-n", nodeLeaseNS)
	if !strings.Contains(stderr, `(NotFound)`) {
		t.Errorf("second delete: stderr %q, want NotFound", stderr)
	}
	k.run("delete", "lease", "--all", "-n", nodeLeaseNS)
	if out := k.run("get", "lease", "-n", nodeLeaseNS, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("after delete --all: leases left: %q", out)
	}
}

// getLease fetches a lease in kube-node-lease with `kubectl get -o json`.
func getLease(t *testing.T, k *kubectlRunner, name string, extra ...string) *coordinationv1.Lease {
	t.Helper()
	out := k.run(append([]string{"get", "lease", name, "-n", nodeLeaseNS, "-o", "json"}, extra...)...)
	var l coordinationv1.Lease
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("get lease %s -o json: %v\n%s", name, err, out)
	}
	return &l
}

func decodeYAMLLease(t *testing.T, out string) *coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	if err := yaml.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("-o yaml is not a Lease: %v\n%s", err, out)
	}
	return &l
}

// managedEntry returns lease's managedFields entry for manager and
// operation, or nil.
func managedEntry(lease *coordinationv1.Lease, manager, operation string) *metav1.ManagedFieldsEntry {
	for i := range lease.ManagedFields {
		e := &lease.ManagedFields[i]
		if e.Manager == manager && string(e.Operation) == operation {
			return e
		}
	}
	return nil
}

// fieldsOf is e's FieldsV1 as text ("" when absent).
func fieldsOf(e *metav1.ManagedFieldsEntry) string {
	if e.FieldsV1 == nil {
		return ""
	}
	return e.FieldsV1.GetRawString()
}
