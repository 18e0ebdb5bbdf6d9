// Package sqscore is what the Go scenario programs (../../v1 and ../../v2) share and no SDK
// touches: the sqs-core and sqs-fifo scenarios' constants (compat/clients/README.md), the
// failed-check mechanism, SQS's digest of message attributes, the environment the contract gives a program,
// and the step runner that prints the contract's stdout lines. Each program keeps its own SDK
// calls and hands SDK values over in the plain forms taken here, so the requests each SDK sends
// are decided by that program alone.
//
// Built in GOPATH mode: the Makefile puts compat/clients/go on GOPATH before Debian's
// /usr/share/gocode, and the programs import this package as "sqscore".
package sqscore

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The scenarios' constants, as the step lists name them.
const (
	CoreScenario = "sqs-core"
	FifoScenario = "sqs-fifo"
	Attempt      = "sqs-fifo-attempt-1" // sqs-fifo's ReceiveRequestAttemptId
	Body1        = "sqs-core message one"
	BadHandle    = "not-a-receipt-handle"
	Account      = "000000000000"
	HTTPTimeout  = 30 * time.Second // one request, the 5 s long polls included
)

var (
	// Blob is ATTRS1's binary value.
	Blob   = []byte("\x00\x01\x02okuri\xff")
	HexMD5 = regexp.MustCompile(`^[0-9a-f]{32}$`)
	Digits = regexp.MustCompile(`^[0-9]+$`)
)

// ARN is the queue's ARN in the account okuri answers for.
func ARN(queue string) string { return "arn:aws:sqs:us-east-1:" + Account + ":" + queue }

// FifoNames are the FIFO queue attributes sqs-fifo asks DEAD for, in the step list's order.
var FifoNames = []string{"FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"}

// FifoBody is the body sqs-fifo sends for a message it calls name ("a1", "b2", ...).
func FifoBody(name string) string { return "sqs-fifo " + name }

// FifoAttributes are sqs-fifo's MAIN queue attributes: every FIFO setting away from its
// default, and a redrive policy to the FIFO dead-letter queue deadQueue.
func FifoAttributes(deadQueue string) map[string]string {
	return map[string]string{
		"FifoQueue":                 "true",
		"ContentBasedDeduplication": "true",
		"DeduplicationScope":        "messageGroup",
		"FifoThroughputLimit":       "perMessageGroupId",
		"VisibilityTimeout":         "30",
		"RedrivePolicy":             `{"deadLetterTargetArn":"` + ARN(deadQueue) + `","maxReceiveCount":"3"}`,
	}
}

// CheckRedrivePolicy checks that policy sends to deadQueue after maxReceiveCount 3 (a number or
// a string).
func CheckRedrivePolicy(policy, deadQueue string) {
	var p map[string]any
	Check(json.Unmarshal([]byte(policy), &p) == nil, "RedrivePolicy %q is not JSON", policy)
	Check(p["deadLetterTargetArn"] == ARN(deadQueue) && fmt.Sprint(p["maxReceiveCount"]) == "3",
		"RedrivePolicy %s", policy)
}

// Sequence checks that number is a FIFO SequenceNumber (decimal digits) after after (when
// after is not empty), and returns it.
func Sequence(number, after string) string {
	Check(Digits.MatchString(number), "SequenceNumber %q", number)
	if after != "" {
		later := len(number) > len(after) || (len(number) == len(after) && number > after)
		Check(later, "SequenceNumber %s not after %s", number, after)
	}
	return number
}

// SHA256Hex is the hex SHA-256 of data: the MessageDeduplicationId SQS derives from a body.
func SHA256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ErrSkipped marks a step the program's SDK cannot express.
var ErrSkipped = errors.New("skipped")

type stepFailed struct{ what string }

func (e stepFailed) Error() string { return e.what }

// Check fails the running step, saying why, unless ok.
func Check(ok bool, format string, args ...any) {
	if !ok {
		panic(stepFailed{fmt.Sprintf(format, args...)})
	}
}

// Must fails the step on an unexpected SDK error.
func Must(err error) {
	if err != nil {
		panic(stepFailed{"unexpected error: " + err.Error()})
	}
}

// APIError reads an SDK's parsed error: its code and message, and ok false when err is not an
// error the SDK parsed from a response.
type APIError func(err error) (code, message string, ok bool)

// ExpectError checks that err is an SDK error with one of the codes (legacy query code or shape
// name), as parse reads it.
func ExpectError(parse APIError, err error, codes ...string) {
	want := strings.Join(codes, " or ")
	Check(err != nil, "expected error %s, the call succeeded", want)
	code, message, ok := parse(err)
	Check(ok, "expected error %s, got a non-SDK error: %v", want, err)
	for _, c := range codes {
		if code == c {
			return
		}
	}
	Check(false, "expected error %s, got %s: %s", want, code, message)
}

// MD5Hex is the hex MD5 of data, as SQS reports it.
func MD5Hex(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

// Attribute is one message attribute with the SDK's pointers read: BinaryValue nil for a string
// or number.
type Attribute struct {
	DataType    string
	StringValue string
	BinaryValue []byte
}

// MD5OfAttributes is SQS's digest of message attributes: names sorted; for each, length-prefixed
// name, data type and value, with a transport byte (1 string, 2 binary) before the value.
func MD5OfAttributes(attrs map[string]Attribute) string {
	var buf bytes.Buffer
	prefixed := func(b []byte) {
		_ = binary.Write(&buf, binary.BigEndian, uint32(len(b)))
		buf.Write(b)
	}
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := attrs[name]
		prefixed([]byte(name))
		prefixed([]byte(v.DataType))
		if v.BinaryValue != nil {
			buf.WriteByte(2)
			prefixed(v.BinaryValue)
		} else {
			buf.WriteByte(1)
			prefixed([]byte(v.StringValue))
		}
	}
	return MD5Hex(buf.Bytes())
}

// SameAttributes is whether got holds exactly want's attributes, binary values compared as bytes.
func SameAttributes(got, want map[string]Attribute) bool {
	if len(got) != len(want) {
		return false
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok || g.DataType != w.DataType {
			return false
		}
		if w.BinaryValue != nil {
			if !bytes.Equal(g.BinaryValue, w.BinaryValue) {
				return false
			}
		} else if g.StringValue != w.StringValue {
			return false
		}
	}
	return true
}

// Set is the items as a set, to compare ids and bodies in any order.
func Set(items ...string) map[string]bool {
	out := map[string]bool{}
	for _, i := range items {
		out[i] = true
	}
	return out
}

// Show is v as JSON, for a failed check's message.
func Show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func env(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Settings are what the contract's environment gives a program.
type Settings struct {
	Scenario string // OKURI_SCENARIO: CoreScenario (when unset) or FifoScenario
	Prefix   string // OKURI_SCENARIO_PREFIX, or the program's own default
	Endpoint string // AWS_ENDPOINT_URL, which these SDKs do not read themselves
	Region   string // AWS_REGION, else AWS_DEFAULT_REGION
}

// ReadSettings reads the environment; an error, to print before exiting 2, when no endpoint is
// set or the scenario is not one of the two.
func ReadSettings(defaultPrefix string) (Settings, error) {
	s := Settings{
		Scenario: env("OKURI_SCENARIO"),
		Prefix:   env("OKURI_SCENARIO_PREFIX"),
		Endpoint: env("AWS_ENDPOINT_URL"),
		Region:   env("AWS_REGION", "AWS_DEFAULT_REGION"),
	}
	if s.Prefix == "" {
		s.Prefix = defaultPrefix
	}
	if s.Scenario == "" {
		s.Scenario = CoreScenario
	}
	if s.Scenario != CoreScenario && s.Scenario != FifoScenario {
		return s, fmt.Errorf("unknown scenario %q; known: %s, %s", s.Scenario, CoreScenario, FifoScenario)
	}
	if s.Endpoint == "" {
		return s, errors.New("AWS_ENDPOINT_URL is not set: point it at okuri")
	}
	return s, nil
}

// Step is one row of the step list: its name and what it sends and checks. An alias of a plain
// struct, so that a program's table can stay positional `{"name", func() error {...}}` rows
// without go vet asking for keyed fields of another package's struct.
type Step = struct {
	Name string
	Run  func() error
}

// RunSteps runs the steps in order, printing `step N name: ok` (or `: skipped (why)`, with
// skippedWhy called when a step returns ErrSkipped) for each, and stops at the first failed
// one, saying why on stderr. It reports whether no step failed.
func RunSteps(steps []Step, skippedWhy func() string) bool {
	for i, s := range steps {
		if err := runStep(s); err != nil {
			if errors.Is(err, ErrSkipped) {
				fmt.Printf("step %d %s: skipped (%s)\n", i+1, s.Name, skippedWhy())
				continue
			}
			fmt.Fprintf(os.Stderr, "step %d %s failed: %v\n", i+1, s.Name, err)
			return false
		}
		fmt.Printf("step %d %s: ok\n", i+1, s.Name)
	}
	return true
}

// runStep turns a failed check (a panic with stepFailed) into an error.
func runStep(s Step) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(stepFailed)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	return s.Run()
}

// ScenarioLine is the contract's last stdout line, laid out as the other programs print it.
func ScenarioLine(client, version, scenario string) string {
	q := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	return fmt.Sprintf(`SCENARIO {"client": %s, "version": %s, "scenario": %s}`, q(client), q(version), q(scenario))
}
