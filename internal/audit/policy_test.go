package audit

import (
	"os"
	"slices"
	"strings"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/leasehold/leasehold/internal/request"
)

const policyHeader = "apiVersion: audit.k8s.io/v1\nkind: Policy\n"

func mustPolicy(t *testing.T, body string) *Policy {
	t.Helper()
	p, warnings, err := ParsePolicy([]byte(policyHeader + body))
	if err != nil {
		t.Fatalf("ParsePolicy: %v", err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	return p
}

// Requests the table below evaluates.
var (
	nodeRenewal = request.Attributes{
		User:            request.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}},
		ResourceRequest: true, Verb: "update", APIGroup: "coordination.k8s.io", APIVersion: "v1",
		Namespace: "kube-node-lease", Resource: "leases", Name: "n1",
	}
	adminNodeDelete = request.Attributes{
		User:            request.User{Name: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}},
		ResourceRequest: true, Verb: "delete", APIVersion: "v1", Resource: "nodes", Name: "n1",
	}
	nodeStatusPatch = request.Attributes{
		User:            request.User{Name: "system:node:n1", Groups: []string{"system:nodes"}},
		ResourceRequest: true, Verb: "patch", APIVersion: "v1", Resource: "nodes", Subresource: "status", Name: "n1",
	}
	healthz = request.Attributes{
		User: request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
		Path: "/healthz/ready", Verb: "get",
	}
)

func TestPolicyRuleFields(t *testing.T) {
	cases := []struct {
		name  string
		rules string
		attrs request.Attributes
		want  auditv1.Level
	}{
		{"no rule matches: None", "rules:\n- level: Metadata\n  users: [bob]\n", nodeRenewal, auditv1.LevelNone},
		{"level only matches resource requests", "rules:\n- level: Request\n", nodeRenewal, auditv1.LevelRequest},
		{"level only matches non-resource requests", "rules:\n- level: Request\n", healthz, auditv1.LevelRequest},
		{"users match", "rules:\n- level: Metadata\n  users: [x, system:node:n1]\n", nodeRenewal, auditv1.LevelMetadata},
		{"users miss", "rules:\n- level: Metadata\n  users: [system:node:n2]\n", nodeRenewal, auditv1.LevelNone},
		{"userGroups any group", "rules:\n- level: Metadata\n  userGroups: [system:masters]\n", adminNodeDelete, auditv1.LevelMetadata},
		{"userGroups miss", "rules:\n- level: Metadata\n  userGroups: [system:nodes]\n", adminNodeDelete, auditv1.LevelNone},
		{"verbs match", "rules:\n- level: Metadata\n  verbs: [delete]\n", adminNodeDelete, auditv1.LevelMetadata},
		{"verbs miss", "rules:\n- level: Metadata\n  verbs: [get]\n", adminNodeDelete, auditv1.LevelNone},
		{"verbs of non-resource requests are HTTP methods", "rules:\n- level: Metadata\n  verbs: [get]\n", healthz, auditv1.LevelMetadata},
		{"namespaces match", "rules:\n- level: Metadata\n  namespaces: [kube-node-lease]\n", nodeRenewal, auditv1.LevelMetadata},
		{"namespaces miss", "rules:\n- level: Metadata\n  namespaces: [default]\n", nodeRenewal, auditv1.LevelNone},
		{"namespace \"\" is cluster-scoped", "rules:\n- level: Metadata\n  namespaces: [\"\"]\n", adminNodeDelete, auditv1.LevelMetadata},
		{"namespace \"\" is not a namespaced object", "rules:\n- level: Metadata\n  namespaces: [\"\"]\n", nodeRenewal, auditv1.LevelNone},
		{"namespaces never match non-resource requests", "rules:\n- level: Metadata\n  namespaces: [\"\"]\n", healthz, auditv1.LevelNone},
		{"resources: group and resource", "rules:\n- level: Metadata\n  resources: [{group: coordination.k8s.io, resources: [leases]}]\n", nodeRenewal, auditv1.LevelMetadata},
		{"resources: other group", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [leases]}]\n", nodeRenewal, auditv1.LevelNone},
		{"resources: group \"*\"", "rules:\n- level: Metadata\n  resources: [{group: \"*\", resources: [leases]}]\n", nodeRenewal, auditv1.LevelMetadata},
		{"resources: empty list is the whole group", "rules:\n- level: Metadata\n  resources: [{group: coordination.k8s.io}]\n", nodeRenewal, auditv1.LevelMetadata},
		{"resources: \"*\"", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [\"*\"]}]\n", nodeStatusPatch, auditv1.LevelMetadata},
		{"resources: res does not match its subresource", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [nodes]}]\n", nodeStatusPatch, auditv1.LevelNone},
		{"resources: res/sub", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [nodes/status]}]\n", nodeStatusPatch, auditv1.LevelMetadata},
		{"resources: */sub", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [\"*/status\"]}]\n", nodeStatusPatch, auditv1.LevelMetadata},
		{"resources: */sub needs a subresource", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [\"*/status\"]}]\n", adminNodeDelete, auditv1.LevelNone},
		{"resources: res/*", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [\"nodes/*\"]}]\n", nodeStatusPatch, auditv1.LevelMetadata},
		{"resources: res/* matches the resource itself", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [\"nodes/*\"]}]\n", adminNodeDelete, auditv1.LevelMetadata},
		{"resourceNames match", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [nodes], resourceNames: [n0, n1]}]\n", adminNodeDelete, auditv1.LevelMetadata},
		{"resourceNames miss", "rules:\n- level: Metadata\n  resources: [{group: \"\", resources: [nodes], resourceNames: [n2]}]\n", adminNodeDelete, auditv1.LevelNone},
		{"resources never match non-resource requests", "rules:\n- level: Metadata\n  resources: [{group: \"\"}]\n", healthz, auditv1.LevelNone},
		{"nonResourceURLs exact", "rules:\n- level: Metadata\n  nonResourceURLs: [/healthz/ready]\n", healthz, auditv1.LevelMetadata},
		{"nonResourceURLs trailing *", "rules:\n- level: Metadata\n  nonResourceURLs: [\"/healthz*\"]\n", healthz, auditv1.LevelMetadata},
		{"nonResourceURLs \"*\"", "rules:\n- level: Metadata\n  nonResourceURLs: [\"*\"]\n", healthz, auditv1.LevelMetadata},
		{"nonResourceURLs miss", "rules:\n- level: Metadata\n  nonResourceURLs: [/livez]\n", healthz, auditv1.LevelNone},
		{"nonResourceURLs never match resource requests", "rules:\n- level: Metadata\n  nonResourceURLs: [\"*\"]\n", nodeRenewal, auditv1.LevelNone},
		{"first match wins", "rules:\n- level: None\n  verbs: [update]\n- level: RequestResponse\n", nodeRenewal, auditv1.LevelNone},
		{"later rule after a miss", "rules:\n- level: None\n  verbs: [get]\n- level: RequestResponse\n", nodeRenewal, auditv1.LevelRequestResponse},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustPolicy(t, c.rules).Evaluate(&c.attrs).Level; got != c.want {
				t.Errorf("level = %q, want %q", got, c.want)
			}
		})
	}
}

func TestPolicyOmitStagesAndManagedFields(t *testing.T) {
	p := mustPolicy(t, `omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: Metadata
  verbs: [delete]
  omitStages: [ResponseStarted, RequestReceived]
  omitManagedFields: false
- level: Metadata
  verbs: [update]
`)
	cases := []struct {
		name        string
		attrs       request.Attributes
		stages      []auditv1.Stage
		omitManaged bool
	}{
		{"rule's stages unioned with the policy's; rule's false overrides", adminNodeDelete,
			[]auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted}, false},
		{"rule without its own settings takes the policy's", nodeRenewal,
			[]auditv1.Stage{auditv1.StageRequestReceived}, true},
		{"no match takes the policy's", healthz, []auditv1.Stage{auditv1.StageRequestReceived}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := p.Evaluate(&c.attrs)
			if !slices.Equal(got.OmitStages, c.stages) || got.OmitManagedFields != c.omitManaged {
				t.Errorf("got stages %v omitManagedFields %v, want %v %v", got.OmitStages, got.OmitManagedFields, c.stages, c.omitManaged)
			}
		})
	}
	p = mustPolicy(t, "rules:\n- level: Metadata\n  omitManagedFields: true\n")
	if !p.Evaluate(&nodeRenewal).OmitManagedFields {
		t.Error("a rule's omitManagedFields: true did not override the policy's false")
	}
}

func TestPolicyInvalid(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string // substrings of the error
	}{
		{"zero rules", policyHeader + "rules: []\n", []string{"line 3:", "0 rules"}},
		{"no rules key", policyHeader, []string{"0 rules"}},
		{"wrong apiVersion", "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n", []string{"line 1:", "audit.k8s.io/v1beta1"}},
		{"wrong kind", policyHeader[:28] + "kind: Event\nrules:\n- level: None\n", []string{"line 1:", `kind "Event"`}},
		{"unknown level", policyHeader + "rules:\n- level: None\n- level: Everything\n  verbs: [get]\n", []string{"line 5:", "rules[1].level", "Everything"}},
		{"missing level", policyHeader + "rules:\n- level: None\n- verbs: [get]\n", []string{"line 5:", "rules[1].level", "Required"}},
		{"bad omitStage in a rule", policyHeader + "rules:\n- level: None\n  omitStages:\n  - Finished\n", []string{"line 6:", "rules[0].omitStages[0]"}},
		{"bad policy omitStage", policyHeader + "omitStages: [Begun]\nrules:\n- level: None\n", []string{"line 3:", "omitStages[0]"}},
		{"non-resource URL without /", policyHeader + "rules:\n- level: None\n  nonResourceURLs: [healthz]\n", []string{"line 5:", "must begin with a '/'"}},
		{"non-resource URL inner *", policyHeader + "rules:\n- level: None\n  nonResourceURLs: [\"/a*/b\"]\n", []string{"line 5:", "final character"}},
		{"resources and nonResourceURLs", policyHeader + "rules:\n- level: None\n- level: None\n  resources: [{group: \"\"}]\n  nonResourceURLs: [/healthz]\n", []string{"line 7:", "both regular resources and non-resource URLs"}},
		{"group with a version", policyHeader + "rules:\n- level: None\n  resources:\n  - group: rbac.authorization.k8s.io/v1\n", []string{"line 6:", "rules[0].resources.group"}},
		{"resourceNames without resources", policyHeader + "rules:\n- level: None\n  resources:\n  - group: \"\"\n    resourceNames: [a]\n", []string{"line 6:", "requires at least one resource"}},
		{"wrong type in a rule", policyHeader + "rules:\n- level: None\n- level: None\n  verbs: get\n", []string{"line 5:", "rules[1]"}},
		{"YAML syntax", policyHeader + "rules:\n- level: None\n  verbs: [get\n", []string{"line"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParsePolicy([]byte(c.text))
			if err == nil {
				t.Fatal("ParsePolicy accepted an invalid policy")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestPolicyUnknownFieldIsAWarning(t *testing.T) {
	p, warnings, err := ParsePolicy([]byte(policyHeader + "rules:\n- level: Metadata\n  verb: [get]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `unknown field "verb"`) {
		t.Errorf("warnings = %q, want one naming the field verb", warnings)
	}
	// The misspelt field is ignored, as kube-apiserver's lenient decoding does.
	if got := p.Evaluate(&adminNodeDelete).Level; got != auditv1.LevelMetadata {
		t.Errorf("level = %q, want Metadata", got)
	}
}

func TestLoadPolicyFileNamesTheFile(t *testing.T) {
	path := t.TempDir() + "/policy.yaml"
	if err := os.WriteFile(path, []byte(policyHeader+"rules: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadPolicyFile(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error = %v, want one naming %s and line 3", err, path)
	}
}
