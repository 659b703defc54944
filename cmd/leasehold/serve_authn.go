package main

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/server"
)

// addAuthnFlags binds serve's authentication flags (see package authn);
// --client-ca-file sits with the TLS flags.
func addAuthnFlags(cmd *cobra.Command, cfg *server.Config) {
	f := cmd.Flags()
	f.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", `static bearer tokens, one CSV record per token: token,user,uid[,"group1,group2"]; re-read within a second of a change (replace the file atomically), so tokens can be added and revoked without a restart`)
	anon := f.VarPF((*negatedBool)(&cfg.DisableAnonymousAuth), "anonymous-auth", "", "treat requests without credentials as user system:anonymous in group system:unauthenticated (RBAC then decides); false answers them 401")
	anon.NoOptDefVal = "true" // --anonymous-auth alone, like any boolean flag
}

// negatedBool is a boolean flag stored as its negation, so that a Config's
// zero value means the flag's default (true).
type negatedBool bool

func (b *negatedBool) String() string { return strconv.FormatBool(!bool(*b)) }

func (b *negatedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b = negatedBool(!v)
	return nil
}

func (b *negatedBool) Type() string { return "bool" }
