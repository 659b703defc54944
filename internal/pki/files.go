package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// PEM block types used for the files this package writes.
const (
	pemTypeCert = "CERTIFICATE"
	pemTypeKey  = "PRIVATE KEY" // PKCS #8
)

// WriteFileAtomic writes data to path through a temporary file in the same
// directory followed by a rename, so that readers (and a restarted server)
// see either the old content or the new one, never a partial file.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	tmpName := tmp.Name()
	// Remove the temporary file on every failure path; after a successful
	// rename it no longer exists and Remove is a harmless no-op.
	defer os.Remove(tmpName)

	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmpName, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmpName, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmpName, path, err)
	}
	return nil
}

// encodeCertPEM returns the PEM encoding of a DER certificate.
func encodeCertPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemTypeCert, Bytes: der})
}

// encodeKeyPEM returns the PKCS #8 PEM encoding of a private key.
func encodeKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemTypeKey, Bytes: der}), nil
}

// parseCertPEM parses the first certificate of a PEM bundle.
func parseCertPEM(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no CERTIFICATE PEM block found")
		}
		if block.Type == pemTypeCert {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse certificate: %w", err)
			}
			return cert, nil
		}
	}
}

// parseKeyPEM parses a private key in PKCS #8, SEC 1 ("EC PRIVATE KEY") or
// PKCS #1 form, the encodings openssl and cfssl commonly produce.
func parseKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no private key PEM block found")
		}
		var (
			key any
			err error
		)
		switch block.Type {
		case pemTypeKey:
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", block.Type, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("private key of type %T cannot sign", key)
		}
		return signer, nil
	}
}

// fileExists reports whether path exists, distinguishing "absent" from
// errors such as permission problems, which must not be mistaken for a
// first start (that would silently replace a CA).
func fileExists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
}

// restrictKeyMode makes a file that holds a private key readable by its
// owner only (0600) if its group or others have any access: files from
// older versions, restored from a backup or copied with cp may be wider,
// and a key others can read is no longer private.
func restrictKeyMode(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("restrict %s to mode 0600: %w", path, err)
	}
	return nil
}
