// Package monitoring holds the test that parses every alert and dashboard
// expression of charts/redlease with the Prometheus parser and checks the
// metrics they name against those the code registers, and each alert's
// runbook against docs/runbooks.md (monitoring_test.go).
package monitoring
