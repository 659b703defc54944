package pki

// ServingCertCovers reports whether the serving pair in certFile/keyFile
// can be served as it is for hosts (plus the loopback names every serving
// certificate has): it matches its key, chains to this CA, stays valid for
// more than RenewBefore and names every host. Several replicas that share
// one CA directory serve the pair made there once (EnsureServingCert by
// `leasehold credentials init`) only when it covers their own addresses;
// they never rewrite it, since the others serve it too.
func (ca *CA) ServingCertCovers(certFile, keyFile string, hosts []string) bool {
	return ca.servingCertReusable(certFile, keyFile, servingHosts(hosts))
}
