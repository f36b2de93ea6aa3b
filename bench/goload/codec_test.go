package main

import (
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

func TestHeadReadsNameAndStatus(t *testing.T) {
	context, err := structpb.NewStruct(map[string]any{"items": []any{"a"}, "price": 3.0, "name": "x"})
	if err != nil {
		t.Fatal(err)
	}
	workflow := &statewrightv1.Workflow{
		Name: "workflows/abc", WorkflowId: "abc", Definition: "order-fulfilment", Version: 1,
		State: "done", Status: statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED,
		Context: context, Revision: 7, Etag: "e", AcceptedEvents: []string{"approve"},
		CreateTime: timestamppb.Now(), UpdateTime: timestamppb.Now(),
	}
	start, err := proto.Marshal(&statewrightv1.StartWorkflowResponse{
		Workflow:    workflow,
		Transitions: []*statewrightv1.Transition{{FromState: "a", ToState: "b", Event: "go"}},
		Created:     true,
	})
	if err != nil {
		t.Fatal(err)
	}
	workflow.Status = statewrightv1.WorkflowStatus_WORKFLOW_STATUS_WAITING
	resume, err := proto.Marshal(&statewrightv1.ResumeWorkflowResponse{Workflow: workflow})
	if err != nil {
		t.Fatal(err)
	}
	c := newCodec()
	for _, tc := range []struct {
		data   []byte
		status statewrightv1.WorkflowStatus
	}{
		{start, statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED},
		{resume, statewrightv1.WorkflowStatus_WORKFLOW_STATUS_WAITING},
		{nil, statewrightv1.WorkflowStatus_WORKFLOW_STATUS_UNSPECIFIED},
	} {
		var h head
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(tc.data)}, &h); err != nil {
			t.Fatal(err)
		}
		name := "workflows/abc"
		if tc.data == nil {
			name = ""
		}
		if h.name != name || h.status != tc.status {
			t.Errorf("got %+v, want name %q status %v", h, name, tc.status)
		}
	}
	var h head
	if err := h.parse(start[:len(start)-3]); err == nil {
		t.Error("a truncated response decoded without error")
	}
	// Anything that is not a head goes through the proto codec.
	var full statewrightv1.StartWorkflowResponse
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(start)}, &full); err != nil {
		t.Fatal(err)
	}
	if full.GetWorkflow().GetRevision() != 7 {
		t.Errorf("proto codec fallback: %v", &full)
	}
}
