package system_test

import (
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func protojsonMarshal(m proto.Message) ([]byte, error) { return protojson.Marshal(m) }
