package s3

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// notInitialized answers as a MinIO whose IAM has not loaded yet: its
// readiness probe already says 200, its admin API says 503.
func notInitialized(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"Code":"XMinioServerNotInitialized","Message":"Server not initialized yet, please try again."}`))
}

func adminAt(t *testing.T, h http.HandlerFunc) *admin {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &admin{endpoint: u, key: "k", secret: "s", region: "us-east-1", http: srv.Client()}
}

func TestAdminCallsWaitForAMinIOThatIsStillInitializing(t *testing.T) {
	var calls atomic.Int32
	a := adminAt(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 3 {
			notInitialized(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"policyName":"p","status":"enabled"}`))
	})
	u, err := a.user(context.Background(), "binky-x")
	if err != nil {
		t.Fatalf("user lookup on an initializing MinIO: %v", err)
	}
	if u == nil || u.PolicyName != "p" || calls.Load() != 4 {
		t.Fatalf("got %+v after %d calls, want the user after 4", u, calls.Load())
	}
}

func TestAdminCallsGiveUpOnAMinIOThatNeverInitializes(t *testing.T) {
	old := notInitializedWait
	notInitializedWait = 300 * time.Millisecond
	t.Cleanup(func() { notInitializedWait = old })
	a := adminAt(t, func(w http.ResponseWriter, r *http.Request) { notInitialized(w) })
	start := time.Now()
	_, err := a.user(context.Background(), "binky-x")
	if !isCode(err, "XMinioServerNotInitialized") {
		t.Fatalf("err = %v, want MinIO's not-initialized error", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("gave up after %v, want about %v", took, notInitializedWait)
	}
}

func TestAdminCallsStopWaitingWhenTheCallerGivesUp(t *testing.T) {
	a := adminAt(t, func(w http.ResponseWriter, r *http.Request) { notInitialized(w) })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := a.user(ctx, "binky-x"); err == nil {
		t.Fatal("user lookup succeeded on a MinIO that never initializes")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("kept waiting %v after the context ended", took)
	}
}

// A MinIO older than its revoke-tokens call answers the unknown admin route
// with 426 XMinioAdminVersionMismatch: that is "cannot revoke" (teardown
// and provisioning go on, as documented), not an error failing every up.
func TestAMinIOWithoutRevokeTokensSaysItCannotRevoke(t *testing.T) {
	a := adminAt(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUpgradeRequired)
		_, _ = w.Write([]byte(`{"Code":"XMinioAdminVersionMismatch","Message":"This 'admin' API is not supported by server in 'mode-server-fs'"}`))
	})
	if err := a.revokeTokens(context.Background(), "binky-x"); !errors.Is(err, errNoRevoke) {
		t.Fatalf("err = %v, want errNoRevoke", err)
	}
	// A refusal is still an error: the admin keys lack the right.
	b := adminAt(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"Code":"AccessDenied","Message":"Access Denied."}`))
	})
	if err := b.revokeTokens(context.Background(), "binky-x"); err == nil || errors.Is(err, errNoRevoke) {
		t.Fatalf("err = %v, want the refusal", err)
	}
}
