package main

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// head is all the load generator reads of a StartWorkflowResponse or ResumeWorkflowResponse:
// workflow.name and workflow.status. Decoding only these two fields, instead of the whole
// response (the context Struct, transitions, timestamps), saves about a tenth of the
// client's CPU a call and most of its allocations.
type head struct {
	name   string
	status statewrightv1.WorkflowStatus
}

// Field numbers in statewright/v1 (workflow_service.proto, workflow.proto).
const (
	responseWorkflowField = 1 // StartWorkflowResponse.workflow, ResumeWorkflowResponse.workflow
	workflowNameField     = 1 // Workflow.name
	workflowStatusField   = 6 // Workflow.status
)

var errMalformed = errors.New("malformed response")

// parse reads a Start/ResumeWorkflowResponse's workflow.name and workflow.status, with
// protobuf's rules: unknown fields are skipped, the last value of a scalar field wins
// and repeated occurrences of the embedded message merge.
func (h *head) parse(b []byte) error {
	*h = head{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		if num == responseWorkflowField && typ == protowire.BytesType {
			workflow, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return errMalformed
			}
			if err := h.parseWorkflow(workflow); err != nil {
				return err
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return errMalformed
		}
		b = b[m:]
	}
	return nil
}

func (h *head) parseWorkflow(b []byte) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		switch {
		case num == workflowNameField && typ == protowire.BytesType:
			name, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return errMalformed
			}
			h.name = string(name)
			b = b[m:]
		case num == workflowStatusField && typ == protowire.VarintType:
			status, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return errMalformed
			}
			h.status = statewrightv1.WorkflowStatus(int32(status))
			b = b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return errMalformed
			}
			b = b[m:]
		}
	}
	return nil
}

// codec is gRPC's proto codec, except that it decodes into a *head by reading only the
// fields head has; requests are marshalled by the proto codec as usual.
type codec struct{ proto encoding.CodecV2 }

func newCodec() codec {
	proto := encoding.GetCodecV2("proto")
	if proto == nil {
		panic("the gRPC proto codec is not registered")
	}
	return codec{proto: proto}
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	h, ok := v.(*head)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	if err := h.parse(buf.ReadOnlyData()); err != nil {
		return fmt.Errorf("decoding the response: %w", err)
	}
	return nil
}

func (c codec) Name() string { return c.proto.Name() }
