import{a as e,b as r}from"./chunk-DYKUNJWJ.js";import"./chunk-TZKC56AF.js";import"./chunk-PHKIAKHS.js";export{e as PacketModule,r as createPacketServices};
