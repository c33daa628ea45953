/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

// Keys of the credentials Secret that the controller writes in a lock's
// namespace and names in status.credentialsSecretRef. Pods read this Secret
// and their DistributedLock, nothing else.
const (
	// CredentialsUsername is the Redis ACL user pods AUTH as ("" or absent:
	// the default user).
	CredentialsUsername = "username"
	// CredentialsPassword is its password (absent: no AUTH).
	CredentialsPassword = "password"
	// CredentialsCA is the PEM bundle of CAs that sign the servers'
	// certificates (absent: the system roots).
	CredentialsCA = "ca.crt"
	// CredentialsSentinelUsername and CredentialsSentinelPassword are the
	// sentinels' own credentials, when they need AUTH.
	CredentialsSentinelUsername = "sentinel-username"
	CredentialsSentinelPassword = "sentinel-password" //nolint:gosec // G101: a Secret key name, not a credential
	// CredentialsClientCert and CredentialsClientKey are the client
	// certificate and key for mutual TLS, when the store names one.
	CredentialsClientCert = "tls.crt"
	CredentialsClientKey  = "tls.key"
)

// Labels and annotations the controller uses.
const (
	// LabelStoreUID marks the credentials Secrets the controller writes
	// with the UID of the store (or inline lock) they belong to.
	LabelStoreUID = "redlease.io/store-uid"
	// AnnotationRotate asks for new tenant passwords: set it (to any new
	// value) on a ClusterLockStore to rotate every namespace's password, or
	// on one credentials Secret to rotate that namespace's.
	AnnotationRotate = "redlease.io/rotate"
)
