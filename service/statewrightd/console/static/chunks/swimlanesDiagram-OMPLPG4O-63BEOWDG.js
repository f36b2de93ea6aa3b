import{a as o,b as m}from"./chunk-M5BNKGIK.js";import"./chunk-UU5CVTII.js";import"./chunk-NBH7YOBD.js";import"./chunk-QPWQLFHS.js";import"./chunk-BMUPLFXD.js";import"./chunk-VA7HNTME.js";import"./chunk-ZOIJ4YHA.js";import"./chunk-25KVF5ZE.js";import"./chunk-ZQKHJJEB.js";import"./chunk-EJDFCK3G.js";import"./chunk-GMENCEHW.js";import"./chunk-262OD2IO.js";import"./chunk-YORIST7Z.js";import"./chunk-O4Q2CR3V.js";import"./chunk-HIGPS4L2.js";import"./chunk-JLFFWKO4.js";import"./chunk-OY7GFI57.js";import"./chunk-O3L6NBNF.js";import"./chunk-ACR3343X.js";import"./chunk-4UJCEP3F.js";import"./chunk-O5DZRKTY.js";import{a as r}from"./chunk-EIBFAW37.js";import"./chunk-PHKIAKHS.js";var i=r(t=>`${o(t)}
  .swimlane.cluster:not([data-color-id]) rect {
    stroke: ${t.clusterBorder} !important;
  }
  [data-look="neo"].cluster rect {
    filter: none;
  }
`,"getStyles"),e=i,F=m({styles:e});export{F as diagram};
