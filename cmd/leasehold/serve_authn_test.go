package main

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/server"
)

func TestAuthnFlags(t *testing.T) {
	cases := []struct {
		args          []string
		wantDisabled  bool
		wantTokenFile string
	}{
		{nil, false, ""},
		{[]string{"--anonymous-auth"}, false, ""},
		{[]string{"--anonymous-auth=false"}, true, ""},
		{[]string{"--anonymous-auth=true", "--token-auth-file", "/etc/tokens.csv"}, false, "/etc/tokens.csv"},
	}
	for _, tc := range cases {
		var cfg server.Config
		cmd := &cobra.Command{Use: "serve"}
		addAuthnFlags(cmd, &cfg)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if cfg.DisableAnonymousAuth != tc.wantDisabled || cfg.TokenAuthFile != tc.wantTokenFile {
			t.Errorf("%q: DisableAnonymousAuth=%v TokenAuthFile=%q", tc.args, cfg.DisableAnonymousAuth, cfg.TokenAuthFile)
		}
		if def := cmd.Flags().Lookup("anonymous-auth").DefValue; def != "true" {
			t.Errorf("--anonymous-auth shows default %q, want true", def)
		}
	}
	var cfg server.Config
	cmd := &cobra.Command{Use: "serve"}
	addAuthnFlags(cmd, &cfg)
	if err := cmd.ParseFlags([]string{"--anonymous-auth=maybe"}); err == nil {
		t.Fatalf("--anonymous-auth=maybe accepted")
	}
}
