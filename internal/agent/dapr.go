/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"

	lockv1 "github.com/redlease/redlease/api/proto/redlease/lock/v1"
	"github.com/redlease/redlease/pkg/lock"
)

// Dapr's distributed-lock building block (HTTP, v1.0-alpha1), served so
// that an app written against it can point its Dapr HTTP port at the agent:
// the same routes, request and response shapes and status codes, plus the
// lease's fence in the lock response. Dapr's lock is a try-lock that
// expires after expiryInSeconds with no renewal; here it is a redlease
// lease, renewed by the watchdog and released by the agent when
// expiryInSeconds have passed (or on unlock), so the key never outlives
// what the app asked for by more than the release's round trip.
const (
	daprLockPath   = "POST /v1.0-alpha1/lock/{store}"
	daprUnlockPath = "POST /v1.0-alpha1/unlock/{store}"
	// daprHealthPath and daprMetadataPath answer the SDKs' wait for their
	// sidecar (the JavaScript SDK reads the metadata).
	daprHealthPath   = "GET /v1.0/healthz/outbound"
	daprMetadataPath = "GET /v1.0/metadata"
)

// Dapr's unlock statuses.
const (
	daprUnlocked           = 0
	daprLockDoesNotExist   = 1
	daprLockBelongsToOther = 2
	daprInternalError      = 3
)

type daprLockRequest struct {
	ResourceID      string `json:"resourceId"`
	LockOwner       string `json:"lockOwner"`
	ExpiryInSeconds int    `json:"expiryInSeconds"`
}

type daprLockResponse struct {
	Success bool `json:"success"`
	// Fence is redlease's addition: the lease's fencing token, as a string
	// of digits as in the lock API's JSON.
	Fence string `json:"fence,omitempty"`
}

type daprUnlockResponse struct {
	Status int `json:"status"`
}

type daprError struct {
	ErrorCode string `json:"errorCode"`
	Message   string `json:"message"`
}

// daprLocks serves Dapr's routes for one store name: resourceId names the
// lock (as LockRef.name), lockOwner the holder.
type daprLocks struct {
	s     *Server
	store string
	mu    sync.Mutex
	owned map[[2]string]string // resourceId, lockOwner → lease handle
}

// registerDapr adds Dapr's lock routes for the lock store named store to
// mux; other store names are refused as Dapr refuses them.
func (s *Server) registerDapr(mux *http.ServeMux, store string) {
	d := &daprLocks{s: s, store: store, owned: map[[2]string]string{}}
	mux.Handle(daprLockPath, http.MaxBytesHandler(http.HandlerFunc(d.lock), MaxRequestBytes))
	mux.Handle(daprUnlockPath, http.MaxBytesHandler(http.HandlerFunc(d.unlock), MaxRequestBytes))
	mux.HandleFunc(daprHealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc(daprMetadataPath, func(w http.ResponseWriter, _ *http.Request) {
		daprReply(w, daprMetadata{ID: "redlease-agent", Components: []daprComponent{{Name: store, Type: "lock.redlease", Version: "v1"}}})
	})
}

// daprMetadata is what Dapr's metadata endpoint would say of a sidecar
// with one lock store.
type daprMetadata struct {
	ID         string          `json:"id"`
	Components []daprComponent `json:"components"`
}

type daprComponent struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Version string `json:"version"`
}

func (d *daprLocks) lock(w http.ResponseWriter, r *http.Request) {
	var req daprLockRequest
	if !d.decode(w, r, &req) {
		return
	}
	if req.ExpiryInSeconds <= 0 || time.Duration(req.ExpiryInSeconds)*time.Second > MaxKeepAlivePeriod {
		daprFail(w, http.StatusBadRequest, "ERR_MALFORMED_REQUEST", fmt.Sprintf("expiryInSeconds %d: want 1 to %d", req.ExpiryInSeconds, int(MaxKeepAlivePeriod/time.Second)))
		return
	}
	owner := [2]string{req.ResourceID, req.LockOwner}
	d.mu.Lock()
	defer d.mu.Unlock() // one lock call at a time per agent: try-locks do not wait
	if id, ok := d.owned[owner]; ok {
		if d.s.leases.holds(id) {
			daprReply(w, daprLockResponse{Success: false}) // held already, by this owner: Dapr answers so
			return
		}
		delete(d.owned, owner)
	}
	l, err := d.s.open(r.Context(), &lockv1.LockRef{Name: req.ResourceID})
	if err != nil {
		daprFail(w, daprStatus(err), "ERR_TRY_LOCK", err.Error())
		return
	}
	lease, err := l.TryAcquire(r.Context())
	switch {
	case errors.Is(err, lock.ErrNotAcquired):
		daprReply(w, daprLockResponse{Success: false})
		return
	case err != nil:
		daprFail(w, daprStatus(d.s.fail(err, false)), "ERR_TRY_LOCK", err.Error())
		return
	}
	d.owned[owner] = d.s.leases.add(lease, time.Duration(req.ExpiryInSeconds)*time.Second)
	daprReply(w, daprLockResponse{Success: true, Fence: strconv.FormatUint(lease.Fence(), 10)})
}

func (d *daprLocks) unlock(w http.ResponseWriter, r *http.Request) {
	var req daprLockRequest
	if !d.decode(w, r, &req) {
		return
	}
	owner := [2]string{req.ResourceID, req.LockOwner}
	d.mu.Lock()
	id, ok := d.owned[owner]
	delete(d.owned, owner)
	d.mu.Unlock()
	if ok {
		if h, err := d.s.leases.remove(id); err == nil {
			if err := h.lease.Release(r.Context()); err != nil && !errors.Is(err, lock.ErrLeaseLost) {
				daprReply(w, daprUnlockResponse{Status: daprInternalError})
				return
			}
			daprReply(w, daprUnlockResponse{Status: daprUnlocked})
			return
		}
	}
	// Not this owner's: held by another, or by nobody.
	l, err := d.s.open(r.Context(), &lockv1.LockRef{Name: req.ResourceID})
	if err != nil {
		daprReply(w, daprUnlockResponse{Status: daprInternalError})
		return
	}
	h, err := l.Inspect(r.Context())
	switch {
	case err != nil:
		daprReply(w, daprUnlockResponse{Status: daprInternalError})
	case len(h.Holders) > 0:
		daprReply(w, daprUnlockResponse{Status: daprLockBelongsToOther})
	default:
		daprReply(w, daprUnlockResponse{Status: daprLockDoesNotExist})
	}
}

// decode reads a request of the configured store with a resource and an
// owner, or answers as Dapr does.
func (d *daprLocks) decode(w http.ResponseWriter, r *http.Request, req *daprLockRequest) bool {
	if store := r.PathValue("store"); store != d.store {
		daprFail(w, http.StatusBadRequest, "ERR_LOCK_STORE_NOT_FOUND", fmt.Sprintf("lock store %s is not found (this agent serves %q)", store, d.store))
		return false
	}
	if err := json.NewDecoder(r.Body).Decode(req); err != nil {
		daprFail(w, http.StatusBadRequest, "ERR_MALFORMED_REQUEST", err.Error())
		return false
	}
	if req.ResourceID == "" || req.LockOwner == "" {
		daprFail(w, http.StatusBadRequest, "ERR_MALFORMED_REQUEST", "resourceId and lockOwner are required")
		return false
	}
	return true
}

// daprStatus is the HTTP status of a refused lock call: Connect's mapping
// of the lock API's code.
func daprStatus(err error) int {
	switch connect.CodeOf(err) {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition:
		return http.StatusBadRequest
	case connect.CodeNotFound:
		return http.StatusNotFound
	case connect.CodePermissionDenied:
		return http.StatusForbidden
	case connect.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func daprReply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to tell
}

func daprFail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(daprError{ErrorCode: code, Message: msg})
}
