package server

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/audit"
	"github.com/leasehold/leasehold/internal/audit/logbackend"
)

// newAuditor builds the auditor and its log backend, or returns nils when
// auditing is off. An invalid policy fails the start with the message the
// policy loader gives (file and line).
func newAuditor(c AuditConfig, scheme *runtime.Scheme, reg prometheus.Registerer, log *slog.Logger) (*audit.Auditor, *logbackend.Backend, error) {
	if c.Log.Path == "" {
		if c.PolicyFile != "" {
			log.Warn("--audit-policy-file is set but --audit-log-path is not: nothing is audited")
		}
		return nil, nil, nil
	}
	policy, err := loadAuditPolicy(c.PolicyFile, log)
	if err != nil {
		return nil, nil, err
	}
	opts := c.Log
	opts.Registerer, opts.Logger = reg, log
	backend, err := logbackend.New(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("audit log: %w", err)
	}
	a := audit.New(audit.Config{Policy: policy, Sink: backend, Encode: auditEncoder(scheme)})
	log.Info("auditing", "policy", policyName(c.PolicyFile), "log", c.Log.Path, "mode", modeName(c.Log.Mode))
	return a, backend, nil
}

// closeAuditLog closes the audit log, which Run does after the HTTP server
// drained and the backend's Run wrote what it buffered.
func closeAuditLog(l *logbackend.Backend, log *slog.Logger) {
	if err := l.Close(); err != nil {
		log.Error("closing audit log", "err", err)
	}
}

func loadAuditPolicy(path string, log *slog.Logger) (*audit.Policy, error) {
	if path == "" {
		return audit.DefaultPolicy()
	}
	p, warnings, err := audit.LoadPolicyFile(path)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn("audit policy", "file", path, "warning", w)
	}
	return p, nil
}

func policyName(path string) string {
	if path == "" {
		return "default (docs/audit-policy.yaml)"
	}
	return path
}

func modeName(m string) string {
	if m == "" {
		return logbackend.ModeBlocking
	}
	return m
}

// auditEncoder encodes request and response objects as the audit event
// logs them: JSON with apiVersion and kind. Objects the server decoded or
// holds in its cache carry no kind, and may be shared, so the kind is
// stamped on a copy. Only levels Request and RequestResponse encode
// objects, so the copy is off the default policy's paths.
func auditEncoder(scheme *runtime.Scheme) func(runtime.Object) ([]byte, error) {
	return func(obj runtime.Object) ([]byte, error) {
		if obj.GetObjectKind().GroupVersionKind().Empty() {
			gvks, _, err := scheme.ObjectKinds(obj)
			if err != nil {
				return nil, fmt.Errorf("audit: kind of %T: %w", obj, err)
			}
			obj = obj.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
		return json.Marshal(obj)
	}
}
